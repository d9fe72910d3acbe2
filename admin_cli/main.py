"""vault-admin: accounts, API keys, access-log export, master key and storage tools.

Commands are thin: they call the same services as the HTTP layer.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from admin_cli import (
    commands_accounts,
    commands_analytics,
    commands_backup,
    commands_doctor,
    commands_init,
    commands_keys,
    commands_log,
    commands_master_key,
    commands_members,
    commands_rooms,
    commands_sign_in,
    commands_storage,
    commands_trace,
)
from admin_cli.context import STATE
from vaultd.config import OPTION_HELP
from vaultd.version import VERSION

app = typer.Typer(
    name="vault-admin",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help, like vaultd's argparse
    context_settings={"help_option_names": ["-h", "--help"]},
    help="vault-admin: administer a vaultd installation (the same data directory and "
         "configuration as vaultd).",
    epilog="Every setting: config/vaultd.toml; operations: docs/operations.md.",
)
app.command("init")(commands_init.init)
app.add_typer(commands_accounts.app, name="accounts")
app.add_typer(commands_keys.app, name="keys")
app.add_typer(commands_log.app, name="log")
app.add_typer(commands_master_key.app, name="master-key")
app.add_typer(commands_storage.app, name="storage")
app.add_typer(commands_backup.app, name="backup")
app.command("restore")(commands_backup.restore)
app.add_typer(commands_analytics.app, name="files")
app.add_typer(commands_rooms.app, name="rooms")
app.command("trace")(commands_trace.trace)
app.command("doctor")(commands_doctor.doctor)
commands_members.members_app.command("sign-in-link")(commands_sign_in.sign_in_link)
commands_members.members_app.command("add-first-admin")(commands_sign_in.add_first_admin)
app.add_typer(commands_members.members_app, name="members")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"vault-admin {VERSION}")
        raise typer.Exit()


@app.callback()
def options(
    data_dir: Annotated[
        str | None, typer.Option("--data-dir", metavar="DATA_DIR", help=OPTION_HELP["data_dir"])
    ] = None,
    config: Annotated[str | None, typer.Option("--config", metavar="CONFIG",
                                                 help=OPTION_HELP["config"])] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    )] = False,
) -> None:
    STATE.data_dir, STATE.config, STATE.json = data_dir, config, as_json


def main() -> None:
    os.umask(0o077)  # what the CLI creates in the data directory stays private, as vaultd's
    app()


if __name__ == "__main__":
    main()
