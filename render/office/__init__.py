"""Office documents (OOXML and OpenDocument): detection in a render worker, conversion to PDF by
a confined LibreOffice (see docs/security.md, "Office converter")."""
