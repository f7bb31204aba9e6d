"""Per-language extraction rules: which tree-sitter nodes are definitions, their names and
kinds, how far their range reaches, where a doc comment may sit, and which nodes are imports.

Each backend is a :class:`Backend` whose ``visit(node, data, parent)`` returns the :class:`Spec` list
for one node plus whether the walk descends into it. The walk itself (iterative, pre-order),
signatures and doc comments live in :mod:`lib.code.symbols`; this module only knows grammars.

Kinds are the canonical names: class, struct, enum, interface, function, method, module,
const, var, trait, type, heading, rule, element.
"""
from __future__ import annotations

from lib.code.record import Record


class Spec:
    """One definition found at a node.

    ``node`` is the definition node (the signature starts there); ``outer`` the node whose
    byte range is the symbol's slice (decorators, ``template <…>``, ``export``, a one-spec Go
    declaration); ``body`` the node a compact view folds (``None`` when there is no body);
    ``sig_node`` is where the signature starts when that is not ``node``
    (decorators, ``export``, ``template <…>``); ``sig_end`` the node whose start ends a header
    signature when the symbol is not a definition kind with a body (a variable bound to an
    arrow function).
    """

    __slots__ = ("name", "kind", "node", "outer", "body", "sig_node", "sig_end")

    def __init__(self, name, kind, node, outer=None, body=None, sig_node=None, sig_end=None):
        self.name, self.kind, self.node, self.outer, self.body = name, kind, node, outer, body
        self.sig_node, self.sig_end = sig_node, sig_end


class Backend(Record):
    """A language backend: see the module docstring."""

    FIELDS = (("name", ""), ("visit", None), ("comments", frozenset()), ("comment_prefix", "//"), ("imports", None),
              ("doc_above", True), ("docstring", None), ("definitions", frozenset()), ("stops", frozenset()), ("query_min_bytes", 0),
              ("candidates", None))
    # ``docstring``: ``(body, data) -> str | None``, a doc string the language keeps in the
    # body (Python), tried before the comment above; ``definitions``: every node type ``visit`` can return a Spec for — a tree-sitter query
    # finds them in C (lib.code.symbols.walk_specs) instead of a Python walk over every node;
    # ``stops``: node types whose inside ``visit`` does not descend into (a symbol under one of
    # them is not listed: a Go function's local types, a C function's locals, Java/C# fields'
    # initialisers); ``query_min_bytes``: below this file size a cold process walks in Python
    # instead, because compiling and running the query costs more than the walk for this grammar.
    # Measured in fresh processes on the real fixtures: the query wins for Java, Rust, Lua, HTML,
    # CSS, JavaScript past ~8 KB and TypeScript past ~32 KB; the walk wins for Python (it only
    # enters statement containers), Go and C/C++/C# (they stop at function bodies) and Ruby
    # (its query compiles in ~10 ms). A long-lived process uses a query once it is compiled.
    # ``candidates``: ``(root, data) -> [node]``, the nodes ``visit`` may list, in source
    # pre-order, found from the bytes instead of a query (HTML: a query over every element
    # costs more than the parse, and a few of them name anything).


def text(node, data: bytes) -> str:
    """Source text of ``node`` (UTF-8, errors replaced)."""
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def field_text(node, name: str, data: bytes) -> str | None:
    """Text of the child in field ``name``, or ``None``."""
    child = node.child_by_field_name(name)
    return text(child, data) if child is not None else None


def _named(node):
    return [c for c in node.children if c.is_named]


# -- Python ------------------------------------------------------------------------------------

def _python_docstring(body, data: bytes) -> str | None:
    """The real docstring: the first statement of ``body`` when it is a string literal.
    Returns its first paragraph, lines stripped and joined with single spaces."""
    if body is None:
        return None
    first = next((c for c in body.children if c.is_named), None)
    if first is None:
        return None
    if first.type == "expression_statement" and first.named_child_count == 1:
        first = first.named_children[0]
    if first.type != "string":
        return None
    parts = first.children
    if len(parts) >= 2 and parts[0].type == "string_start" and parts[-1].type == "string_end" and \
            not any(c.type == "interpolation" for c in parts):
        # the bytes between the quotes: the outline parse may have left them out (lib/code/skeleton.py)
        content = data[parts[0].end_byte:parts[-1].start_byte].decode("utf-8", "replace")
    else:
        content = "".join(text(c, data) for c in parts if c.type == "string_content")
    return docstring_paragraph(content)


def docstring_paragraph(content: str) -> str | None:
    """A docstring's first paragraph (``content``: the text between its quotes): lines stripped
    and joined with single spaces, ``None`` when empty."""
    paragraph = []
    for line in content.strip().splitlines():
        line = line.strip()
        if not line:
            if paragraph:
                break
            continue
        paragraph.append(line)
    return " ".join(paragraph) or None


_PY_CONTAINERS = frozenset({
    "module", "block", "decorated_definition", "if_statement", "elif_clause", "else_clause", "try_statement",
    "except_clause", "except_group_clause", "finally_clause", "with_statement", "for_statement", "while_statement",
    "match_statement", "case_clause", "ERROR"})
"""Python nodes that may hold a ``def``/``class``; expressions and simple statements never do,
so the walk skips them (most of a Python tree)."""


def _python(node, data, parent):
    t = node.type
    if t in ("function_definition", "class_definition"):
        name = field_text(node, "name", data)
        outer = parent if parent is not None and parent.type == "decorated_definition" else node
        body = node.child_by_field_name("body")
        kind = "class" if t == "class_definition" else "function"
        return [Spec(name, kind, node, outer, body, sig_node=outer)], True
    if t in ("assignment", "expression_statement") and parent is not None and (
            parent.type == "module" or (parent.type == "block" and parent.parent.type == "class_definition")):
        return [Spec(text(n, data), "var", node, node, None) for n in _python_assigned_names(node)], False
    return [], t in _PY_CONTAINERS


def _python_assigned_names(statement) -> list:
    """Identifier nodes a module- or class-level assignment binds: ``X = 1``, ``X: int = 1``, ``A = B = 1``,
    ``a, b = …`` (attribute and subscript targets bind no module name). ``statement`` is the
    ``assignment`` (this grammar puts it straight under ``module``) or an ``expression_statement``
    holding one."""
    out = []
    node = statement if statement.type == "assignment" else next((c for c in statement.children if c.is_named), None)
    while node is not None and node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            out.append(left)
        elif left is not None and left.type in ("pattern_list", "tuple_pattern"):
            out.extend(c for c in left.children if c.type == "identifier")
        node = node.child_by_field_name("right")
    return out


def _python_imports(root, data):
    out = []
    for node in root.children:
        _python_import_node(node, data, out)
    return out


def _python_import_node(node, data, out):
    t = node.type
    if t == "import_statement":
        for child in node.children_by_field_name("name"):
            target = child.child_by_field_name("name") if child.type == "aliased_import" else child
            out.append((text(target, data), node.start_point[0] + 1))
    elif t == "import_from_statement":
        module = node.child_by_field_name("module_name")
        if module is not None:
            out.append((text(module, data), node.start_point[0] + 1))
    elif t in ("if_statement", "try_statement", "block", "else_clause", "except_clause", "finally_clause",
               "elif_clause", "with_statement"):
        for child in node.children:
            _python_import_node(child, data, out)


# -- Rust --------------------------------------------------------------------------------------

_RUST_KINDS = {"function_item": "function", "function_signature_item": "function", "struct_item": "struct",
               "union_item": "struct", "enum_item": "enum", "trait_item": "trait", "mod_item": "module",
               "type_item": "type", "const_item": "const", "static_item": "var"}


def _rust(node, data, parent):
    kind = _RUST_KINDS.get(node.type)
    if kind:
        return [Spec(field_text(node, "name", data), kind, node, node, node.child_by_field_name("body"))], True
    return [], True


def _rust_use_target(arg, data) -> str | None:
    t = arg.type
    if t == "use_as_clause":
        return text(arg.child_by_field_name("path"), data)
    if t == "scoped_use_list":
        path = arg.child_by_field_name("path")
        if path is not None:
            return text(path, data)
        lst = arg.child_by_field_name("list")
        return _rust_first_in_list(lst, data)
    if t == "use_list":
        return _rust_first_in_list(arg, data)
    if t == "use_wildcard":
        s = text(arg, data)
        return s[:-3] if s.endswith("::*") else s
    return text(arg, data)


def _rust_first_in_list(lst, data):
    if lst is None:
        return None
    first = next((c for c in lst.children if c.is_named), None)
    return _rust_use_target(first, data) if first is not None else None


def _rust_imports(root, data):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in reversed(node.children):
            t = child.type
            if t == "use_declaration":
                arg = child.child_by_field_name("argument")
                target = _rust_use_target(arg, data) if arg is not None else None
                if target:
                    out.append((target, child.start_point[0] + 1, "use"))
            elif t == "mod_item":
                if child.child_by_field_name("body") is None:
                    out.append((field_text(child, "name", data), child.start_point[0] + 1, "mod"))
                else:
                    stack.append(child.child_by_field_name("body"))
            elif t == "extern_crate_declaration":
                out.append((field_text(child, "name", data), child.start_point[0] + 1, "extern"))
    out.sort(key=lambda x: x[1])
    return out


# -- TypeScript / JavaScript ------------------------------------------------------------------

_TS_KINDS = {"function_declaration": "function", "generator_function_declaration": "function",
             "class_declaration": "class", "abstract_class_declaration": "class",
             "method_definition": "method", "abstract_method_signature": "method",
             "interface_declaration": "interface", "type_alias_declaration": "type",
             "enum_declaration": "enum"}
_MODULE_LEVEL = ("program", "export_statement")


def _ts(node, data, parent):
    t = node.type
    kind = _TS_KINDS.get(t)
    exported = parent is not None and parent.type == "export_statement"
    if kind:
        name = field_text(node, "name", data)
        if name is None:
            return [], True
        outer = parent if exported else node
        return [Spec(name, kind, node, outer, node.child_by_field_name("body"),
                     sig_node=outer)], True
    if t == "expression_statement" and parent is not None and parent.type in _MODULE_LEVEL:
        return _ts_assigned_function(node, data), True
    if t in ("lexical_declaration", "variable_declaration") and parent is not None and parent.type in _MODULE_LEVEL:
        outer = parent if exported else node
        specs = []
        for decl in node.children:
            if decl.type != "variable_declarator":
                continue
            name_node = decl.child_by_field_name("name")
            if name_node is None or name_node.type != "identifier":
                continue
            value = decl.child_by_field_name("value")
            body = fn_body = None
            if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                fn_body = value.child_by_field_name("body")
                body = fn_body if fn_body is not None and fn_body.type == "statement_block" else None
            specs.append(Spec(text(name_node, data), "var", node, outer, body, sig_node=outer, sig_end=fn_body))
        return specs, True
    return [], True


_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")


def _ts_assigned_function(node, data) -> list:
    """A module-level ``res.status = function status(code) { … }`` (or ``exports.x = (…) =>``):
    a function named as written on the left, as Lua's ``function M.f``. Beyond upstream, which
    lists none of a CommonJS module's methods (Express's response.js outlined to its imports)."""
    lefts = []
    value = next((c for c in node.children if c.type == "assignment_expression"), None)
    while value is not None and value.type == "assignment_expression":  # `res.set = res.header = function …`
        lefts.append(value.child_by_field_name("left"))
        value = value.child_by_field_name("right")
    if value is None or value.type not in _FUNCTION_VALUES:
        return []
    body = value.child_by_field_name("body")
    block = body if body is not None and body.type == "statement_block" else None
    return [Spec(text(left, data), "function", node, node, block, sig_end=body)
            for left in lefts if left is not None and left.type == "member_expression"]


def _string_value(node, data) -> str | None:
    if node is None:
        return None
    if node.type in ("string", "interpreted_string_literal", "raw_string_literal", "string_literal"):
        parts = [c for c in node.children if c.type in ("string_fragment", "string_content",
                                                          "interpreted_string_literal_content")]
        if parts:
            return "".join(text(p, data) for p in parts)
        s = text(node, data)
        return s[1:-1] if len(s) >= 2 else ""
    return None


_TS_IMPORT_QUERY = "[(import_statement) (export_statement) (call_expression function: [(identifier) (import)])] @n"
"""The only nodes a TypeScript/JavaScript import can be: a query finds them in C."""


def _ts_imports(root, data):
    from lib.code import languages

    binding = languages.binding()
    lang = languages.language_of(root)
    query = _query_cache.get(("ts-imports", id(lang)))
    if query is None:
        query = _query_cache[("ts-imports", id(lang))] = binding.Query(lang, _TS_IMPORT_QUERY)
    nodes = binding.QueryCursor(query).captures(root).get("n", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    out = []
    for node in nodes:
        t = node.type
        if t in ("import_statement", "export_statement"):
            src = node.child_by_field_name("source")
            if src is not None:
                out.append((_string_value(src, data), node.start_point[0] + 1))
                continue
            req = next((c for c in node.children if c.type == "import_require_clause"), None)
            if req is not None:
                src = req.child_by_field_name("source") or next((c for c in req.children if c.type == "string"), None)
                if src is not None:
                    out.append((_string_value(src, data), node.start_point[0] + 1))
            continue
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is not None and text(fn, data) in ("require", "import") and args is not None:
            first = next((c for c in args.children if c.is_named), None)
            value = _string_value(first, data) if first is not None else None
            if value is not None and first.type == "string":
                out.append((value, node.start_point[0] + 1))
    return [o for o in out if o[0] is not None]


_query_cache = {}


# -- Go ----------------------------------------------------------------------------------------

def _go(node, data, parent):
    t = node.type
    if t == "function_declaration":
        return [Spec(field_text(node, "name", data), "function", node, node, node.child_by_field_name("body"))], False
    if t == "method_declaration":
        return [Spec(field_text(node, "name", data), "method", node, node, node.child_by_field_name("body"))], False
    if t in ("type_spec", "type_alias"):
        outer = _go_outer(node, parent)
        typ = node.child_by_field_name("type")
        body = next((c for c in typ.children if c.type == "field_declaration_list"), None) if typ is not None else None
        return [Spec(field_text(node, "name", data), "type", outer, outer, body)], True
    if t in ("const_spec", "var_spec"):
        outer = _go_outer(node, parent)
        kind = "const" if t == "const_spec" else "var"
        return [Spec(text(n, data), kind, outer, outer, None) for n in node.children_by_field_name("name")], False
    if t in ("block", "func_literal"):
        return [], False
    return [], True


def _go_outer(spec, parent):
    if parent is not None and parent.type in ("type_declaration", "const_declaration", "var_declaration"):
        specs = [c for c in parent.children if c.type in ("type_spec", "type_alias", "const_spec", "var_spec")]
        if len(specs) == 1:
            return parent
    return spec


def _go_imports(root, data):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "import_spec":
            path = _string_value(node.child_by_field_name("path"), data)
            if path is not None:
                out.append((path, node.start_point[0] + 1))
            continue
        if node.type in ("source_file", "import_declaration", "import_spec_list"):
            stack.extend(reversed(node.children))
    return out


# -- Java --------------------------------------------------------------------------------------

_JAVA_KINDS = {"class_declaration": "class", "record_declaration": "class", "interface_declaration": "interface",
               "enum_declaration": "enum", "annotation_type_declaration": "interface",
               "method_declaration": "method", "constructor_declaration": "method"}


def _java(node, data, parent):
    t = node.type
    kind = _JAVA_KINDS.get(t)
    if kind:
        return [Spec(field_text(node, "name", data), kind, node, node, node.child_by_field_name("body"))], True
    if t == "field_declaration":
        specs = []
        for decl in node.children_by_field_name("declarator"):
            specs.append(Spec(field_text(decl, "name", data), "var", node, node, None))
        return specs, False
    return [], True


def _java_imports(root, data):
    out = []
    for node in root.children:
        if node.type == "import_declaration":
            name = next((c for c in node.children if c.type in ("scoped_identifier", "identifier")), None)
            if name is None:
                continue
            target = text(name, data)
            if any(c.type == "asterisk" for c in node.children):
                target += ".*"
            out.append((target, node.start_point[0] + 1))
    return out


# -- C and C++ ---------------------------------------------------------------------------------

_NAME_TYPES = ("identifier", "field_identifier", "type_identifier", "destructor_name", "operator_name",
               "qualified_identifier", "template_function", "template_method", "primitive_type")


def _declarator_name(decl, data):
    """``(name, is_function)`` following a declarator chain; ``is_function`` is True when the
    name is directly a function's (a prototype), False for variables and function pointers."""
    is_function = False
    node = decl
    while node is not None:
        t = node.type
        if t in _NAME_TYPES:
            return text(node, data), is_function
        if t == "operator_cast":  # `operator bool() const`: named as C++ spells the call
            typ = node.child_by_field_name("type")
            return ("operator " + " ".join(text(typ, data).split()) if typ is not None else None), True
        if t == "function_declarator":
            inner = node.child_by_field_name("declarator")
            is_function = inner is not None and inner.type != "parenthesized_declarator"
            node = inner
            continue
        if t == "parenthesized_declarator":
            is_function = False
            node = next((c for c in node.children if c.is_named), None)
            continue
        if t in ("pointer_declarator", "reference_declarator", "array_declarator", "init_declarator",
                 "attributed_declarator"):
            node = node.child_by_field_name("declarator") or next(
                (c for c in node.children if c.is_named and c.type.endswith(("declarator", "identifier", "_name"))), None)
            continue
        return None, is_function
    return None, is_function


def _macro_like(name: str) -> bool:
    """An ALL_CAPS identifier (a macro by convention): a "function" with no return type and
    such a name is a macro invocation, not a definition (constructors are never ALL_CAPS)."""
    return len(name) > 1 and name.replace("_", "").isalnum() and name.upper() == name and not name.isdigit() \
        and any(c.isalpha() for c in name)


def _c_family(node, data, parent, cpp: bool):
    t = node.type
    if t in ("preproc_def", "preproc_function_def"):
        return [Spec(field_text(node, "name", data), "const", node, node, None)], False
    if t == "function_definition":
        name, _ = _declarator_name(node.child_by_field_name("declarator"), data)
        outer = parent if parent is not None and parent.type == "template_declaration" else node
        if name is None or (node.child_by_field_name("type") is None and _macro_like(name)):
            return [], False  # `FMT_CATCH(...) {}`: a macro invocation the parser took for a definition
        return [Spec(name, "function", node, outer, node.child_by_field_name("body"), sig_node=outer)], False
    if t in ("declaration", "field_declaration"):
        specs = []
        for decl in node.children_by_field_name("declarator"):
            name, is_function = _declarator_name(decl, data)
            if name is None or is_function:
                continue
            specs.append(Spec(name, "var", node, node, None))
        return specs, True
    if t == "type_definition":
        specs = []
        for decl in node.children_by_field_name("declarator"):
            name, _ = _declarator_name(decl, data)
            if name:
                specs.append(Spec(name, "type", node, node, _typedef_body(node)))
        return specs, True
    if t in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier"):
        body = node.child_by_field_name("body")
        name = node.child_by_field_name("name")
        if body is None or name is None or (parent is not None and parent.type == "type_definition"):
            return [], True
        kind = {"enum_specifier": "enum", "class_specifier": "class"}.get(t, "struct")
        outer = parent if parent is not None and parent.type == "template_declaration" else node
        return [Spec(text(name, data), kind, node, outer, body, sig_node=outer)], True
    if cpp and t == "namespace_definition":
        name = node.child_by_field_name("name")
        if name is None:
            return [], True
        return [Spec(text(name, data), "module", node, node, node.child_by_field_name("body"))], True
    if t == "compound_statement":
        return [], False
    return [], True


def _typedef_body(node):
    typ = node.child_by_field_name("type")
    return typ.child_by_field_name("body") if typ is not None else None


def _c(node, data, parent):
    return _c_family(node, data, parent, cpp=False)


def _cpp(node, data, parent):
    return _c_family(node, data, parent, cpp=True)


def _c_imports(root, data, cpp=False):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        t = node.type
        if t == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None:
                if path.type == "string_literal":
                    out.append((_string_value(path, data), node.start_point[0] + 1, "local"))
                else:
                    out.append((text(path, data).strip("<>"), node.start_point[0] + 1, "system"))
            continue
        if cpp and t == "using_declaration":
            name = next((c for c in node.children if c.is_named), None)
            if name is not None:
                out.append((text(name, data), node.start_point[0] + 1, "using"))
            continue
        if t in ("function_definition", "compound_statement"):
            continue
        stack.extend(reversed(node.children))
    return out


# -- C# ----------------------------------------------------------------------------------------

_CS_KINDS = {"class_declaration": "class", "record_declaration": "class", "record_struct_declaration": "struct",
             "interface_declaration": "interface", "struct_declaration": "struct", "enum_declaration": "enum",
             "method_declaration": "method", "constructor_declaration": "method", "property_declaration": "var",
             "local_function_statement": "function", "namespace_declaration": "type",
             "file_scoped_namespace_declaration": "type"}


def _csharp(node, data, parent):
    t = node.type
    kind = _CS_KINDS.get(t)
    if kind:
        name = field_text(node, "name", data)
        if name is None:
            return [], True
        return [Spec(name, kind, node, node, node.child_by_field_name("body"))], True
    if t in ("field_declaration", "event_field_declaration"):
        specs = []
        for var in (c for c in node.children if c.type == "variable_declaration"):
            for decl in (c for c in var.children if c.type == "variable_declarator"):
                name = decl.child_by_field_name("name") or next((c for c in decl.children if c.type == "identifier"), None)
                if name is not None:
                    specs.append(Spec(text(name, data), "var", node, node, None))
        return specs, False
    return [], True


def _csharp_imports(root, data):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "using_directive":
            if node.child_by_field_name("name") is not None or any(c.type == "=" for c in node.children):
                continue  # an alias: `using X = Y;`
            name = next((c for c in node.children if c.type in ("identifier", "qualified_name")), None)
            if name is not None:
                out.append((text(name, data), node.start_point[0] + 1))
            continue
        if node.type in ("compilation_unit", "namespace_declaration", "file_scoped_namespace_declaration",
                         "declaration_list"):
            stack.extend(reversed(node.children))
    return out


class _At:
    """A position standing in for a node where only ``start_byte`` is read (``Spec.sig_end``)."""

    __slots__ = ("start_byte",)

    def __init__(self, start_byte: int):
        self.start_byte = start_byte


def _body_or_end(node, body):
    """Where a Ruby or Lua definition's header ends (``Spec.sig_end``): at its body, or, when it
    has none (empty, or left out of the outline parse, lib/code/skeleton.py), just past its
    parameters (its name when it has none)."""
    if body is not None:
        return body
    last = node.child_by_field_name("parameters") or node.child_by_field_name("name")
    return _At(last.end_byte) if last is not None else None


# -- Ruby --------------------------------------------------------------------------------------

def _ruby(node, data, parent):
    t = node.type
    if t in ("method", "singleton_method"):
        body = node.child_by_field_name("body")
        return [Spec(field_text(node, "name", data), "function", node, node, body, sig_end=_body_or_end(node, body))], True
    if t in ("class", "module"):
        return [Spec(field_text(node, "name", data), "class" if t == "class" else "type", node, node,
                     node.child_by_field_name("body"))], True
    if t == "assignment":  # `FOO = …`: Ruby allows a constant assignment only outside methods
        left = node.child_by_field_name("left")
        if left is not None and left.type == "constant":
            return [Spec(text(left, data), "const", node, node, None)], True
    return [], True


def _ruby_imports(root, data):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call":
            method = node.child_by_field_name("method")
            receiver = node.child_by_field_name("receiver")
            name = text(method, data) if method is not None else ""
            if receiver is None and name in ("require", "require_relative"):
                args = node.child_by_field_name("arguments")
                first = next((c for c in args.children if c.is_named), None) if args is not None else None
                if first is not None and first.type == "string":
                    value = "".join(text(c, data) for c in first.children if c.type == "string_content")
                    out.append((value, node.start_point[0] + 1, name))
                continue
        stack.extend(reversed(node.children))
    return out


# -- Lua ---------------------------------------------------------------------------------------

def _lua(node, data, parent):
    t = node.type
    if t == "function_declaration":
        body = node.child_by_field_name("body")
        return [Spec(field_text(node, "name", data), "function", node, node, body, sig_end=_body_or_end(node, body))], True
    if t == "variable_declaration" and parent is not None and parent.type == "chunk":
        specs = []
        assign = next((c for c in node.children if c.type == "assignment_statement"), None)
        holder = assign if assign is not None else node
        for lst in (c for c in holder.children if c.type in ("variable_list", "attrib_name_list")):
            for name in lst.children_by_field_name("name") or [c for c in lst.children if c.type == "identifier"]:
                specs.append(Spec(text(name, data), "var", node, node, None))
        if not specs:
            for name in node.children_by_field_name("name"):
                specs.append(Spec(text(name, data), "var", node, node, None))
        return specs, True
    return [], True


def _lua_imports(root, data):
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_call":
            name = node.child_by_field_name("name")
            if name is not None and text(name, data) == "require":
                args = node.child_by_field_name("arguments")
                first = None
                if args is not None:
                    first = args if args.type == "string" else next((c for c in args.children if c.is_named), None)
                if first is not None and first.type == "string":
                    content = next((c for c in first.children if c.type == "string_content"), None)
                    out.append((text(content, data) if content is not None else "", node.start_point[0] + 1))
                    continue
        stack.extend(reversed(node.children))
    return out


# -- Markup ------------------------------------------------------------------------------------

_HEADING_BYTES = frozenset({b"h1", b"h2", b"h3", b"h4", b"h5", b"h6"})


def _html(node, data, parent):
    if node.type in ("element", "script_element", "style_element"):
        tag = node.child(0)  # the start tag comes first (``children`` would build every child)
        if tag is None or tag.type not in ("start_tag", "self_closing_tag"):
            return [], True
        tag_name = tag.child(1)
        heading = (tag_name is not None and tag_name.type == "tag_name"
                   and data[tag_name.start_byte:tag_name.end_byte].lower() in _HEADING_BYTES)
        if not heading and b"id" not in data[tag.start_byte:tag.end_byte].lower():
            return [], True  # neither a heading nor an `id` anywhere in the tag: most elements
        specs = []
        for attr in (c for c in tag.children if c.type == "attribute"):
            key = next((c for c in attr.children if c.type == "attribute_name"), None)
            if key is None or text(key, data).lower() != "id":
                continue
            value = next((c for c in attr.children if c.type in ("attribute_value", "quoted_attribute_value")), None)
            if value is None:
                continue
            inner = next((c for c in value.children if c.type == "attribute_value"), None)
            name = text(inner, data) if inner is not None else text(value, data).strip("\"'")
            if name:
                specs.append(Spec(name, "element", node, node, None))
                break
        if heading:
            words = " ".join(_html_text(node, data).split())
            if words:
                specs.append(Spec(words, "heading", node, node, None))
        return specs, True
    return [], True


_HTML_ELEMENTS = frozenset({"element", "script_element", "style_element"})
_HTML_TAGS = frozenset({"start_tag", "self_closing_tag"})


def _html_candidates(root, data: bytes) -> list:
    """The elements :func:`_html` can list, in source pre-order: those whose start tag has an
    ``id`` attribute or names a heading. Every such attribute name or tag name is two bytes
    that, lower-cased, read ``id`` or ``h1``…``h6``: each occurrence of those in the file is
    looked up in the tree (in C) and kept when its leaf is such a name in an element's start
    tag. (A query over every element cost more than the parse.)"""
    lower = data.lower()
    found = {}
    for word, leaf in ((b"id", "attribute_name"),) + tuple((b"h%d" % k, "tag_name") for k in range(1, 7)):
        i = lower.find(word)
        while i >= 0:
            node = root.descendant_for_byte_range(i, i + 2)
            if node is not None and node.type == leaf and node.start_byte == i and node.end_byte == i + 2:
                tag = node.parent
                if leaf == "attribute_name":
                    tag = tag.parent if tag is not None and tag.type == "attribute" else None
                if tag is not None and tag.type in _HTML_TAGS:
                    element = tag.parent
                    if element is not None and element.type in _HTML_ELEMENTS:
                        found[element.start_byte] = element
            i = lower.find(word, i + 2)
    return [found[k] for k in sorted(found)]


def _html_plain_text(content: bytes) -> str | None:
    """:func:`_html_text` of an element whose content is ``content``, read from the bytes, or
    ``None`` unless the content is plain: ASCII, no ``&`` (entities), every ``<`` opening a
    start or end tag (``<a…>``, ``</a>``) whose quotes pair up and that is not a ``script`` or
    ``style`` (raw text). The grammar's text is then every run between tags, trimmed of
    whitespace (its text is any byte but ``< > &``, starting and ending with a non-blank)."""
    if not content.isascii() or b"&" in content:
        return None
    out, last, pos, n = [], None, 0, len(content)
    while True:
        lt = content.find(b"<", pos)
        piece = content[pos:n if lt < 0 else lt]
        if b">" in piece:
            return None
        words = piece.strip()
        if words:
            at = pos + len(piece) - len(piece.lstrip())
            if last is not None:
                gap = content[last:at]
                if gap != b"".join(gap.split()):
                    out.append(b" ")
            out.append(words)
            last = at + len(words)
        if lt < 0:
            return b"".join(out).decode("ascii")
        name_at = lt + 2 if content[lt + 1:lt + 2] == b"/" else lt + 1
        gt = content.find(b">", lt)
        if gt < 0 or not content[name_at:name_at + 1].isalpha():
            return None
        tag = content[lt:gt]
        if tag.count(b'"') % 2 or tag.count(b"'") % 2:
            return None
        name = tag[name_at - lt:].split(None, 1)[0].rstrip(b"/").lower() if len(tag) > name_at - lt else b""
        if name in (b"script", b"style"):
            return None
        pos = gt + 1


def _html_text(node, data) -> str:
    """The text content of an element: its ``text`` and entity descendants in order, joined by a
    space where whitespace separates them in the source (``<code>a</code>, <code>b</code>`` is
    ``a, b``; ``x</a>: y`` is ``x: y``). Plain content (:func:`_html_plain_text`) is read from
    the bytes; anything else by a walk of the element's nodes."""
    tag, end = node.child(0), node.child(node.child_count - 1)
    if tag is not None and end is not None and end.type == "end_tag":
        plain = _html_plain_text(data[tag.end_byte:end.start_byte])
        if plain is not None:
            return plain
    return html_text_walk(node, data)


def html_text_walk(node, data) -> str:
    """:func:`_html_text` by a walk of the element's ``text`` and ``entity`` descendants."""
    out, stack, last = [], [node], None
    while stack:
        n = stack.pop()
        if n.type in ("text", "entity"):
            gap = data[last:n.start_byte] if last is not None else b""
            if gap != b"".join(gap.split()):  # whitespace between the two texts
                out.append(" ")
            out.append(text(n, data))
            last = n.end_byte
        elif n.child_count:
            stack.extend(reversed(n.children))
    return "".join(out)


def _css(node, data, parent):
    if node.type == "rule_set":
        sel = next((c for c in node.children if c.type == "selectors"), None)
        if sel is not None:
            name = " ".join(text(sel, data).split())
            return [Spec(name, "rule", node, node, next((c for c in node.children if c.type == "block"), None))], True
    return [], True


def _markdown(node, data, parent):
    if node.type == "section":
        head = next((c for c in node.children if c.is_named), None)
        if head is not None and head.type in ("atx_heading", "setext_heading"):
            content = head.child_by_field_name("heading_content")
            name = " ".join(text(content, data).split()) if content is not None else ""
            if head.type == "atx_heading":
                name = name.strip().rstrip("#").strip()
            return [Spec(name, "heading", head, node, None)], True
    return [], True


_C_DEFS = frozenset({"preproc_def", "preproc_function_def", "function_definition", "declaration", "field_declaration",
                     "type_definition", "struct_specifier", "union_specifier", "enum_specifier"})
_C_STOPS = frozenset({"preproc_def", "preproc_function_def", "function_definition", "compound_statement"})
_TS_DEFS = frozenset(_TS_KINDS) | {"lexical_declaration", "variable_declaration", "expression_statement"}
_WALK = 1 << 40
"""``query_min_bytes`` of a grammar whose Python walk wins at every size a cold call reads."""

BACKENDS = {
    "python": Backend("python", _python, frozenset({"comment"}), "#", _python_imports, doc_above=True, docstring=_python_docstring,
                      definitions=frozenset({"function_definition", "class_definition", "assignment",
                                                         "expression_statement"}),
                      query_min_bytes=_WALK),
    "rust": Backend("rust", _rust, frozenset({"line_comment", "block_comment"}), "//", _rust_imports,
                    definitions=frozenset(_RUST_KINDS)),
    "typescript": Backend("typescript", _ts, frozenset({"comment"}), "//", _ts_imports, definitions=_TS_DEFS,
                          query_min_bytes=32 * 1024),
    "javascript": Backend("javascript", _ts, frozenset({"comment"}), "//", _ts_imports, definitions=_TS_DEFS,
                          query_min_bytes=8 * 1024),
    "go": Backend("go", _go, frozenset({"comment"}), "//", _go_imports,
                  definitions=frozenset({"function_declaration", "method_declaration", "type_spec", "type_alias",
                                         "const_spec", "var_spec"}),
                  stops=frozenset({"function_declaration", "method_declaration", "const_spec", "var_spec", "block",
                                   "func_literal"}), query_min_bytes=_WALK),
    "java": Backend("java", _java, frozenset({"line_comment", "block_comment"}), "//", _java_imports,
                    definitions=frozenset(_JAVA_KINDS) | {"field_declaration"}, stops=frozenset({"field_declaration"})),
    "c": Backend("c", _c, frozenset({"comment"}), "//", lambda r, d: _c_imports(r, d, cpp=False),
                 definitions=_C_DEFS, stops=_C_STOPS, query_min_bytes=_WALK),
    "cpp": Backend("cpp", _cpp, frozenset({"comment"}), "//", lambda r, d: _c_imports(r, d, cpp=True),
                   definitions=_C_DEFS | {"class_specifier", "namespace_definition"}, stops=_C_STOPS,
                   query_min_bytes=_WALK),
    "csharp": Backend("csharp", _csharp, frozenset({"comment"}), "//", _csharp_imports,
                      definitions=frozenset(_CS_KINDS) | {"field_declaration", "event_field_declaration"},
                      stops=frozenset({"field_declaration", "event_field_declaration"}), query_min_bytes=_WALK),
    "ruby": Backend("ruby", _ruby, frozenset({"comment"}), "#", _ruby_imports,
                    definitions=frozenset({"method", "singleton_method", "class", "module", "assignment"}),
                    query_min_bytes=64 * 1024),
    "lua": Backend("lua", _lua, frozenset({"comment"}), "--", _lua_imports,
                   definitions=frozenset({"function_declaration", "variable_declaration"})),
    "html": Backend("html", _html, frozenset({"comment"}), "<!--", None, doc_above=False,
                    definitions=_HTML_ELEMENTS, candidates=_html_candidates),
    "css": Backend("css", _css, frozenset({"comment"}), "/*", None, doc_above=False,
                   definitions=frozenset({"rule_set"})),
    "markdown": Backend("markdown", _markdown, frozenset(), "", None, doc_above=False,
                        definitions=frozenset({"section"})),
}
"""Backend name → :class:`Backend`."""
