"""The MCP server registry under basic auth: every signed-in user reads it, only admins change it (MLflow's
per-server ``mcp_server`` grants are not served; ``auth/rules/platform.py``), and no route answers without credentials."""

from __future__ import annotations

import urllib.parse

import pytest
import requests
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.server import get_app_client

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.auth.test_client import PASSWORD, as_user
from tests.conftest import unique

pytestmark = pytest.mark.e2e


def test_users_read_and_admins_write(basic_server: str) -> None:
    user = unique("mcp-user")
    name = f"com.{unique('auth')}/srv"
    with as_user(ADMIN, ADMIN_PASSWORD):
        get_app_client("basic-auth", tracking_uri=basic_server).create_user(user, PASSWORD)
        admin = MlflowClient(basic_server)
        admin.create_mcp_server(name, description="by the admin")
        admin.create_mcp_server_version({"name": name, "version": "1.0.0"})
    with as_user(user):
        client = MlflowClient(basic_server)
        got = client.get_mcp_server(name)
        assert (got.description, got.created_by, got.last_updated_by) == ("by the admin", ADMIN, ADMIN)
        assert [v.version for v in client.search_mcp_server_versions(name)] == ["1.0.0"]
        assert name in [s.name for s in client.search_mcp_servers(filter_string=f"name = '{name}'")]
        for write in (
            lambda: client.create_mcp_server(f"com.{unique('auth')}/mine"),
            lambda: client.update_mcp_server(name, description="mine now"),
            lambda: client.set_mcp_server_tag(name, "k", "v"),
            lambda: client.create_mcp_server_version({"name": name, "version": "2.0.0"}),
            lambda: client.delete_mcp_server(name),
        ):
            with pytest.raises(MlflowException) as refused:
                write()
            assert refused.value.error_code == "PERMISSION_DENIED"
    anonymous = requests.get(f"{basic_server}/api/3.0/mlflow/mcp-servers/{urllib.parse.quote(name, safe='')}", timeout=30)
    assert anonymous.status_code == 401
    with as_user(ADMIN, ADMIN_PASSWORD):
        assert MlflowClient(basic_server).get_mcp_server(name).description == "by the admin"
        MlflowClient(basic_server).delete_mcp_server(name)
