"""Webhooks: endpoints, the events (built from plain records), delivery and its failures.
Below the domains that emit events, so it imports none of them."""
