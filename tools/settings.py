"""Server-wide settings in the table's CONFIG partition (``CFG#settings``), changed without a redeploy.

    python -m tools.settings show
    python -m tools.settings set MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=true MLFLOW_WEBHOOK_ALLOWED_SCHEMES=http,https
    python -m tools.settings unset MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS

Runs against ``TABLE_NAME`` at ``DYNAMODB_ENDPOINT_URL`` (unset = AWS). Functions read the item once per
container and then every 5 minutes (``serverless_mlflow.store.settings``); a setting the item does not hold comes
from the function's environment (the stack's CDK context), then from MLflow's default.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow.store import settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.settings", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("show", "set", "unset"))
    parser.add_argument("values", nargs="*", help="NAME=VALUE (set) or NAME (unset)")
    args = parser.parse_args(argv)
    try:
        if args.command == "set":
            pairs = [value.split("=", 1) for value in args.values]
            if any(len(pair) != 2 for pair in pairs):
                parser.error("set takes NAME=VALUE arguments")
            settings.store({name: value for name, value in pairs})
        elif args.command == "unset":
            settings.store(dict.fromkeys(args.values))
    except (KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stored = settings.stored_values()
    effective = {name: settings.get(name) for name in settings.SETTINGS}
    print(json.dumps({"stored": stored, "effective (here)": effective}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
