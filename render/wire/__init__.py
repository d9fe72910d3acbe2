"""What crosses the process boundary: task values and errors, channel framing, encoded replies."""
