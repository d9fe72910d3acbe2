"""Configuration: precedence, validation, and one clear line when start-up must stop."""

from __future__ import annotations

import pytest

from tests.vault_process import run_vaultd
from vaultd.config import ConfigError, load_settings


def test_flags_beat_environment_beat_file_beat_defaults() -> None:
    file_values = {"port": 9000, "render.workers": 3, "upload.max_bytes": 10}
    env = {"VAULTD_PORT": "9100", "VAULTD_RENDER_WORKERS": "4"}
    settings = load_settings(file_values, env=env, flags={"port": "9200"})
    assert (settings.port, settings.render_workers, settings.upload_max_bytes) == (9200, 4, 10)
    assert load_settings({}, env={}).port == 8080
    assert load_settings({}, env={}).upload_max_bytes == 26_214_400


@pytest.mark.parametrize(("file_values", "env", "named"), [
    ({"port": "eighty"}, {}, "port"),
    ({}, {"VAULTD_RENDER_WORKERS": "0"}, "render.workers"),
    ({}, {"VAULTD_STORAGE_BACKEND": "floppy"}, "storage.backend"),
    ({"render": 1, "colour": "blue"}, {}, "colour"),
    ({}, {"VAULTD_PUBLIC_URL": "ftp://x"}, "public_url"),
    ({}, {"VAULTD_TRUSTED_PROXIES": "10.0.0.0/33"}, "proxy.trusted"),
    ({}, {"VAULTD_WATERMARK_TIMEZONE": "Mars/Olympus"}, "watermark.timezone"),
    ({}, {"VAULTD_SMTP_PORT": "0"}, "smtp.port"),
])
def test_invalid_settings_name_the_setting(file_values: dict, env: dict, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(file_values, env=env)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_repr_hides_secrets() -> None:
    settings = load_settings({}, env={"VAULTD_MASTER_KEY": "k1:secretvalue",
                                      "VAULTD_AZURE_CONNECTION_STRING": "AccountKey=zzz",
                                      "VAULTD_SMTP_PASSWORD": "mailpass"})
    assert "secretvalue" not in repr(settings) and "zzz" not in repr(settings)
    assert "mailpass" not in repr(settings)


@pytest.mark.parametrize(("args", "env", "named"), [
    (["--port", "abc"], {}, "port"),
    ([], {"VAULTD_MASTER_KEY": "k1:tooshort"}, "VAULTD_MASTER_KEY"),
    ([], {"VAULTD_RENDER_WORKERS": "-2"}, "render.workers"),
])
def test_vaultd_refuses_to_start_with_one_clear_line(tmp_path, args: list[str],
                                                     env: dict[str, str], named: str) -> None:
    result = run_vaultd(["--data-dir", str(tmp_path), *args], env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
    assert "tooshort" not in result.stderr


def test_a_refused_backend_leaves_no_master_key_behind(tmp_path) -> None:
    result = run_vaultd(["--data-dir", str(tmp_path)], {"VAULTD_STORAGE_BACKEND": "s3"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "vaultd: config: storage.backend 's3' needs storage.s3.bucket (VAULTD_S3_BUCKET)"]
    assert not (tmp_path / "master.key").exists()


def test_an_unknown_key_in_the_config_file_stops_start_up(tmp_path) -> None:
    config = tmp_path / "vaultd.toml"
    config.write_text('port = 8080\n[render]\nworkerz = 2\n')
    result = run_vaultd(["--config", str(config), "--data-dir", str(tmp_path)], {})
    assert result.returncode == 2 and "render.workerz" in result.stderr
