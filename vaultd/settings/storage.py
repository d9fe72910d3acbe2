"""Where data lives: the database, the blob backend and the master key."""

from __future__ import annotations

from dataclasses import dataclass

from backends import BACKENDS
from vaultd.settings.declare import setting
from vaultd.settings.parsers import choice, number, path, text, url


@dataclass(frozen=True)
class StorageSettings:
    mongodb_uri: str = setting(
        "mongodb.uri", text, "", "VAULTD_MONGODB_URI",
        "MongoDB URI; empty starts the embedded SecantusDB under data_dir/db.")
    mongodb_database: str = setting(
        "mongodb.database", text, "vaultd", "VAULTD_MONGODB_DATABASE",
        "Database name.")
    mongodb_embedded_start_seconds: float = setting(
        "mongodb.embedded_start_seconds", number(1, 86400), 120.0,
        "VAULTD_EMBEDDED_DB_START_SECONDS",
        "Seconds the embedded SecantusDB may take to answer at a start or restart (a big store "
        "opens slowly); one that exits fails the start at once.")
    storage_backend: str = setting(
        "storage.backend", choice(*BACKENDS), "local", "VAULTD_STORAGE_BACKEND",
        f"Blob backend: {' or '.join(BACKENDS)}.")
    storage_local_dir: str = setting(
        "storage.local_dir", path, "", "VAULTD_STORAGE_LOCAL_DIR",
        "Directory of the local backend; empty: data_dir/blobs.")
    storage_azure_connection_string: str = setting(
        "storage.azure.connection_string", text, "", "VAULTD_AZURE_CONNECTION_STRING",
        "Azure Storage connection string.")
    storage_azure_account_url: str = setting(
        "storage.azure.account_url", text, "", "VAULTD_AZURE_ACCOUNT_URL",
        "Azure account URL, used with a credential when no connection string is given.")
    storage_azure_container: str = setting(
        "storage.azure.container", text, "vaultd", "VAULTD_AZURE_CONTAINER",
        "Azure container, created at start-up when missing.")
    storage_s3_endpoint_url: str = setting(
        "storage.s3.endpoint_url", url, "", "VAULTD_S3_ENDPOINT_URL",
        "S3-compatible endpoint; empty: AWS. Credentials come from the AWS chain, not settings.")
    storage_s3_region: str = setting(
        "storage.s3.region", text, "", "VAULTD_S3_REGION",
        "S3 region; empty: the AWS chain's.")
    storage_s3_bucket: str = setting(
        "storage.s3.bucket", text, "", "VAULTD_S3_BUCKET",
        "S3 bucket (required with storage.backend s3), created at start-up when missing.")
    storage_s3_prefix: str = setting(
        "storage.s3.prefix", text, "", "VAULTD_S3_PREFIX",
        "Key prefix of every blob in the bucket, ending in '/' (e.g. vaultd/); empty: none.")
    storage_s3_addressing_style: str = setting(
        "storage.s3.addressing_style", choice("virtual", "path"), "virtual",
        "VAULTD_S3_ADDRESSING_STYLE",
        "virtual (bucket.host, AWS) or path (host/bucket, most S3-compatible servers).")
    master_key_file: str = setting(
        "master_key.file", path, "", "VAULTD_MASTER_KEY_FILE",
        "Master keyring file; empty: data_dir/master.key (generated on first start, mode 0600).")
    master_key_value: str = setting(
        "master_key.value", text, "", "VAULTD_MASTER_KEY",
        "Master keyring given inline (id:base64url entries); takes precedence over the file.")
