"""vault-admin: accounts, API keys, access-log export and master-key rotation.

Commands are thin: they call the same services as the HTTP layer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from admin_cli import (
    commands_accounts,
    commands_doctor,
    commands_keys,
    commands_log,
    commands_master_key,
    commands_storage,
)
from admin_cli.context import STATE

app = typer.Typer(
    name="vault-admin",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Administer a vaultd installation.",
)
app.add_typer(commands_accounts.app, name="accounts")
app.add_typer(commands_keys.app, name="keys")
app.add_typer(commands_log.app, name="log")
app.add_typer(commands_master_key.app, name="master-key")
app.add_typer(commands_storage.app, name="storage")
app.command("doctor")(commands_doctor.doctor)


@app.callback()
def options(
    data_dir: Annotated[
        str | None, typer.Option("--data-dir", help="vaultd data directory.")
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="vaultd TOML config file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    STATE.data_dir, STATE.config, STATE.json = data_dir, config, as_json


def main() -> None:
    app()


if __name__ == "__main__":
    main()
