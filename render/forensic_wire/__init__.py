"""What of leak tracing both sides use: the server (vaultd, vault-admin) and the workers.

Render ids and trace codes (`trace_codes`), the placement evidence a worker measures and the
server parses (`evidence`), and which image a leak is from its first bytes (`image_kinds`). No
drawing, no reading of pixels, no kernel: the server loads this package and never
`render.forensic` (docs/architecture.md, "How it is built").
"""
