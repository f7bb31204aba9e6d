"""ctxlake's shared library: one module per concept (docs/design.md §1).

Flow: hook → spool → syncd → store → maint → snapshot → cache → briefing / MCP.
Importing any module here has no side effects (docs/design.md §14): no environment reads,
no directories created, no sockets, no heavy imports at module level.
"""
