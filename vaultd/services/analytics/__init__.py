"""What the owner learns: engagement per link and page, reports, the link listing."""
