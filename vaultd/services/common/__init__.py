"""Plumbing every domain shares: batched deletes, newest-first paging, records kept briefly,
the outbox, the access log, render-pool calls. Imports no other services package."""
