"""The blob storage several vaultd processes share in a test, on either cloud backend: Azure
(Azurite) or S3 (moto_server behind a relay). Each can be taken down and brought back with its
data kept, and read directly as a backend."""

from __future__ import annotations

from dataclasses import dataclass

from backends.azure import AzureBackend, AzureConfig
from backends.base import BlobBackend
from tests.azurite import ACCOUNT_KEY, Azurite
from tests.moto_server import SECRET_ACCESS_KEY, MotoServer
from tests.tcp_relay import TcpRelay


@dataclass
class AzureStorage:
    azurite: Azurite
    container: str
    down_log = "Azure storage unavailable: ServiceRequestError"  # what vaultd logs in an outage
    secret = ACCOUNT_KEY

    def env(self) -> dict[str, str]:
        return self.azurite.env(self.container)

    def backend(self) -> BlobBackend:
        return AzureBackend(AzureConfig(self.container,
                                        connection_string=self.azurite.connection_string))

    def stop(self) -> None:
        self.azurite.stop()

    def start(self) -> None:
        self.azurite.start()  # the same port and data


@dataclass
class S3Storage:
    moto: MotoServer
    relay: TcpRelay  # vaultd reaches moto through it: cutting it is the outage (moto keeps data)
    bucket: str
    prefix: str = "shared/"
    down_log = "S3 storage unavailable: EndpointConnectionError"
    secret = SECRET_ACCESS_KEY

    def env(self) -> dict[str, str]:
        return {**self.moto.env(self.bucket, self.prefix),
                "VAULTD_S3_ENDPOINT_URL": f"http://127.0.0.1:{self.relay.port}"}

    def backend(self) -> BlobBackend:
        return self.moto.backend(self.bucket, self.prefix)  # needs moto_server.aws_credentials

    def stop(self) -> None:
        self.relay.stop()

    def start(self) -> None:
        self.relay.start()


SharedStorage = AzureStorage | S3Storage
