"""Stored files: uploads, blobs, renditions, Office conversion, deletion, downloads."""
