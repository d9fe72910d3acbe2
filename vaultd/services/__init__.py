"""What vaultd does, without HTTP: one package per domain, lowest layer first. A package imports
only those above it in this list (docs/architecture.md, "Services by domain";
tests/test_services_layers.py checks it).

    common      shared plumbing: batched deletes, newest-first windows, brief caches, outbox,
                access log, render-pool calls
    accounts    accounts, API keys, quotas, the usage counters kept on the account
    webhooks    endpoints, events (built from plain records), delivery
    files       stored files: uploads, blobs, renditions, Office conversion, deletion
    links       view links: create, read (kept a second for pages), revoke
    gates       what a reader must pass before a link's pages are served
    pages       the page path and the invisible mark's key
    rooms       data rooms; their page resolver is passed to the page path by `vaultd.main`
    analytics   engagement, reports, a file's links as its owner sees them
    tracing     leak tracing
    storage     backup, restore, storage tools, re-wrapping, crash recovery, disk reserve
"""
