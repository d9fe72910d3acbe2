"""vaultd's settings, declared once by domain (`declare.setting`), parsed by `parsers`; the
frozen `Settings` that inherits every group, and the loader, are in `vaultd.config`."""
