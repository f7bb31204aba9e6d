"""pytest plugin: a real S3-compatible server for the test session (filled in by the S3 work)."""
