"""search_logged_models: MLflow's own small grammar (`mlflow/utils/search_logged_model_utils.py`) and the
SqlAlchemyStore semantics (`_apply_filter_string_datasets_search_logged_models`,
`_apply_order_by_search_logged_models`).

Logged model dict shape (missing keys / None = SQL NULL)::

    {"model_id": str, "experiment_id": str (digits), "name": str, "artifact_location": str,
     "creation_timestamp": int, "last_updated_timestamp": int,
     "status": "UNSPECIFIED" | "PENDING" | "READY" | "FAILED" (or its int code), "lifecycle_stage": str,
     "model_type": str | None, "source_run_id": str | None, "status_message": str | None,
     "tags": {key: str}, "params": {key: str},
     "metrics": [{"key": str, "value": float, "timestamp": int, "step": int, "run_id": str | None,
                  "dataset_name": str | None, "dataset_digest": str | None}]}   # the full metric history

Semantics worth knowing: a metric comparison holds when ANY logged value of that key (any step, run or
dataset) satisfies it (NaN is stored as 0, +/-inf as +/-MAX_FLOAT); `status` and `experiment_id` are INTEGER
columns, so `status = 'READY'` matches nothing on sqlite (the stored value is 2) while `status = '2'` does.
Order by `metrics.<k>` uses each model's latest value of k (timestamp DESC, step DESC, run_id ASC), missing
last; attributes sort missing last; tie-breakers `creation_timestamp DESC`, `model_id ASC`.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from sqlparse.sql import Comparison as SqlComparison

from serverless_mlflow.core.errors import ATTRIBUTE_NOT_FOUND, MlflowError, invalid
from serverless_mlflow.search import filter_matching, ordering
from serverless_mlflow.search.filter_matching import compare, metric_value
from serverless_mlflow.search.filters import LOGGED_MODEL, Filter
from serverless_mlflow.search.ordering import OrderBy, OrderTerm
from serverless_mlflow.search.paging import SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT, decode_page_token
from serverless_mlflow.search.queries import SearchQuery
from serverless_mlflow.search.sql_tokens import join_in_comparison_tokens, parse_sql

_ENTITY_TYPES = ["attributes", "metrics", "params", "tags"]
_IDENTIFIER_RE = re.compile(r"^([a-z]+)\.(.+)$")
# SqlLoggedModel.ALIASES and its columns (our dict field in brackets when it differs).
_ALIASES = {
    "creation_time": "creation_timestamp_ms",
    "creation_timestamp": "creation_timestamp_ms",
    "last_updated_timestamp": "last_updated_timestamp_ms",
}
_COLUMNS = {
    "model_id": "model_id",
    "experiment_id": "experiment_id",
    "name": "name",
    "artifact_location": "artifact_location",
    "creation_timestamp_ms": "creation_timestamp",
    "last_updated_timestamp_ms": "last_updated_timestamp",
    "status": "status",
    "lifecycle_stage": "lifecycle_stage",
    "model_type": "model_type",
    "source_run_id": "source_run_id",
    "status_message": "status_message",
}
_INTEGER_COLUMNS = {"experiment_id", "creation_timestamp_ms", "last_updated_timestamp_ms", "status"}
_NUMERIC_OPS = ("<", "<=", ">", ">=", "=", "!=")
_STRING_OPS = ("=", "!=", "LIKE", "ILIKE", "IN", "NOT IN")
_STATUS_INT = {"UNSPECIFIED": 0, "PENDING": 1, "READY": 2, "FAILED": 3}


def parse_logged_model_filter(filter_string: str | None, datasets: list[dict[str, Any]] | None = None) -> Filter:
    """Parse like `search_logged_model_utils.parse_filter_string`. Items are dicts {"type": "attributes" |
    "metrics" | "params" | "tags", "key", "comparator", "value"} (attribute keys are SQL column names, e.g.
    creation_timestamp_ms). `datasets` = [{"dataset_name", "dataset_digest"?}] as the handler passes them."""
    flt, late_error = _parse_logged_model_filter(filter_string, datasets)
    if late_error is not None:
        raise late_error
    return flt


def _parse_logged_model_filter(filter_string: str | None, datasets: list[dict[str, Any]] | None) -> tuple[Filter, MlflowError | None]:
    """The filter, and the error MLflow only hits when the database runs the query (after order_by checks)."""
    late_error: MlflowError | None = None
    if datasets and not all(d.get("dataset_name") for d in datasets):
        raise invalid("`dataset_name` in the `datasets` clause must be specified.")
    comparisons: list[dict[str, Any]] = []
    if filter_string:
        try:
            parsed = parse_sql(filter_string)
        except Exception as e:
            raise invalid(f"Invalid filter string: {filter_string!r}. {e!r}") from e
        if len(parsed) != 1:
            raise invalid(f"Invalid filter string: {filter_string!r}. Expected a single SQL expression.")
        for stmt in join_in_comparison_tokens(parsed[0].tokens):
            if isinstance(stmt, SqlComparison):
                tokens = [str(t) for t in stmt.tokens if not t.is_whitespace]
                if len(tokens) != 3:
                    raise invalid(f"Invalid comparison: {stmt}. Expected a comparison with 3 tokens.")
                identifier, op, value = tokens
                op = op.upper()
                type_, key = _entity_from_str(identifier)
                numeric = type_ == "metrics" or (type_ == "attributes" and key in ("creation_timestamp_ms", "last_updated_timestamp_ms"))
                ops = _NUMERIC_OPS if numeric else _STRING_OPS
                if op not in ops:
                    raise invalid(f"Invalid comparison operator for {type_}.{key}: {op!r}. Expected one of {ops}.")
                parsed_value: Any
                if numeric:
                    try:
                        parsed_value = float(value)
                    except ValueError:  # MLflow lets this escape (a 500); it is the client's input.
                        raise invalid(f"Invalid filter string: {filter_string!r}. Could not convert {value!r} to a number.") from None
                elif value.startswith("(") and value.endswith(")"):
                    try:
                        parsed_value = ast.literal_eval(value)
                    except (ValueError, SyntaxError):
                        raise invalid(f"Invalid filter string: {filter_string!r}. Ill-formed list {value}.") from None
                    parsed_value = (parsed_value,) if isinstance(parsed_value, str) else parsed_value
                else:
                    parsed_value = value.strip("'")  # (sic) double quotes are kept
                if isinstance(parsed_value, tuple) != (op in ("IN", "NOT IN")) and late_error is None:
                    # MLflow hands this to the database driver, which fails (BAD_REQUEST with a driver message).
                    late_error = invalid(
                        f"Invalid comparison: {stmt}. IN and NOT IN take a list of values, other operators a single value."
                    )
                if type_ == "attributes" and key not in _COLUMNS:
                    # MLflow: AttributeError on the SQL model (a 500). A bad key is the client's input.
                    raise invalid(f"Invalid attribute key '{key}' specified.")
                comparisons.append({"type": type_, "key": key, "comparator": op, "value": parsed_value})
            elif stmt.value.strip().upper() == "AND":
                pass
            else:
                raise invalid(
                    f"Invalid filter string: {filter_string!r}. Expected a list of comparisons "
                    f"separated by 'AND' (e.g. 'metrics.loss > 0.1 AND params.lr = 0.01')."
                )
    normalized = [(c["type"], c["key"], c["comparator"], c["value"]) for c in comparisons]
    flt = Filter(LOGGED_MODEL, comparisons, normalized)
    flt.datasets = list(datasets or [])  # type: ignore[attr-defined]
    return flt, late_error


def _entity_from_str(s: str) -> tuple[str, str]:
    if m := _IDENTIFIER_RE.match(s):
        if m.group(1) not in _ENTITY_TYPES:
            raise invalid(f"Invalid entity type: {m.group(1)!r}. Expected one of {_ENTITY_TYPES}.")
        return m.group(1), m.group(2).strip("`")
    return "attributes", _ALIASES.get(s, s).strip("`")


def _column_value(model: dict[str, Any], column: str) -> Any:
    v = model.get(_COLUMNS[column])
    if column == "status" and isinstance(v, str):
        return _STATUS_INT.get(v.upper(), 0)
    if column in _INTEGER_COLUMNS and v is not None:
        return int(v)
    return v


def _as_number(text: str) -> float | int | None:
    try:
        f = float(text.strip())
    except ValueError:
        return None
    return int(f) if f.is_integer() else f


def _compare_integer_column(op: str, lhs: int, value: Any) -> bool:
    """sqlite affinity: a TEXT operand that looks numeric is converted; otherwise any number < any text."""
    if op in ("LIKE", "ILIKE"):
        return compare(op, str(lhs), value)
    if op in ("IN", "NOT IN"):
        hit = any(_compare_integer_column("=", lhs, v) for v in value)
        return hit if op == "IN" else not hit
    if isinstance(value, str):
        num = _as_number(value)
        if num is None:  # INTEGER vs TEXT: the integer is smaller
            return op in ("!=", "<", "<=")
        value = num
    return compare(op, lhs, value)


def _metric_on_datasets(metric: dict[str, Any], datasets: list[dict[str, Any]]) -> bool:
    for d in datasets:
        if metric.get("dataset_name") != d["dataset_name"]:
            continue
        if "dataset_digest" in d and metric.get("dataset_digest") != d["dataset_digest"]:
            continue  # NB: a None digest in the request means "digest IS NULL" (SQLAlchemy's `== None`)
        return True
    return False


def _sanitized(value: float) -> float:
    v = float(value)
    return 0.0 if math.isnan(v) else metric_value(v)


def logged_model_matches(model: dict[str, Any], flt: Filter) -> bool:
    datasets: list[dict[str, Any]] = getattr(flt, "datasets", [])
    has_metric_filters = False
    for type_, key, op, value in flt.normalized:
        if type_ == "attributes":
            lhs = _column_value(model, key)
            if lhs is None:
                return False
            ok = _compare_integer_column(op, lhs, value) if key in _INTEGER_COLUMNS else compare(op, lhs, value)
            if not ok:
                return False
        elif type_ == "metrics":
            has_metric_filters = True
            if not any(
                m.get("key") == key and compare(op, _sanitized(m["value"]), value) and (not datasets or _metric_on_datasets(m, datasets))
                for m in model.get("metrics") or ()
            ):
                return False
        else:
            values = model.get(type_) or {}
            lhs = values.get(key)
            if lhs is None or not compare(op, lhs, value):
                return False
    if datasets and not has_metric_filters:
        return any(_metric_on_datasets(m, datasets) for m in model.get("metrics") or ())
    return True


def parse_logged_model_order_by(order_by: list[dict[str, Any]] | None) -> OrderBy:
    """`_apply_order_by_search_logged_models`. order_by = [{"field_name", "ascending", "dataset_name",
    "dataset_digest"}] as the handler builds it. Metric terms are OrderTerm(type="metric", key="<k>|<dataset_name
    or ''>|<dataset_digest or ''>") (use `logged_model_raw_value` to read them)."""
    terms: list[OrderTerm] = []
    has_creation = has_model_id = False
    for ob in order_by or []:
        field_name = ob.get("field_name")
        ascending = bool(ob.get("ascending", True))
        if not isinstance(field_name, str) or not field_name:
            raise invalid(f"Invalid order by field name: {field_name}")
        if "." not in field_name:
            name = _ALIASES.get(field_name, field_name)
            if name not in _COLUMNS:
                # MLflow's getattr on its model fails: an attribute lookup, classified as such.
                raise MlflowError(f"Invalid order by field name: {field_name}", "INVALID_PARAMETER_VALUE", error_class=ATTRIBUTE_NOT_FOUND)
            has_creation = has_creation or name == "creation_timestamp_ms"
            has_model_id = has_model_id or name == "model_id"
            terms.append(OrderTerm("attribute", name, ascending, True))
            continue
        entity, name = field_name.split(".", 1)
        if entity != "metrics":
            raise invalid(f"Invalid order by field name: {field_name}. Only metrics are supported.")
        key = "|".join([name, ob.get("dataset_name") or "", ob.get("dataset_digest") or ""])
        terms.append(OrderTerm("metric", key, ascending, True))
    if not has_creation:
        terms.append(OrderTerm("attribute", "creation_timestamp_ms", False, True))
    if not has_model_id:
        terms.append(OrderTerm("attribute", "model_id", True, True))
    return OrderBy(LOGGED_MODEL, terms)


def logged_model_raw_value(model: dict[str, Any], term: OrderTerm) -> Any:
    if term.type != "metric":
        return _column_value(model, term.key)
    # NB: metric keys may contain "|": split from the right (dataset name/digest are the last two fields).
    name, dataset_name, dataset_digest = term.key.rsplit("|", 2)
    rows = [
        m
        for m in model.get("metrics") or ()
        if m.get("key") == name
        and (not dataset_name or m.get("dataset_name") == dataset_name)
        and (not dataset_digest or m.get("dataset_digest") == dataset_digest)
    ]
    if not rows:
        return None
    # timestamp DESC, step DESC, run_id ASC (NULL first in sqlite): the first row wins.
    rows.sort(key=lambda m: (-int(m["timestamp"]), -int(m.get("step") or 0), m.get("run_id") is not None, m.get("run_id") or ""))
    return _sanitized(rows[0]["value"])


def prepare_logged_model_search(
    filter_string: str | None = None,
    datasets: list[dict[str, Any]] | None = None,
    max_results: int | None = None,
    order_by: list[dict[str, Any]] | None = None,
    page_token: str | None = None,
) -> Any:
    """search_logged_models: datasets check, filter, order_by, page token; max_results defaults to 100."""
    flt, late_error = _parse_logged_model_filter(filter_string, datasets)
    order = parse_logged_model_order_by(order_by)
    pos = decode_page_token(page_token, order)
    if late_error is not None:
        raise late_error
    return SearchQuery(flt, order, pos, max_results or SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT, page_token)


filter_matching.KIND_MATCHERS[LOGGED_MODEL] = logged_model_matches
ordering.KIND_RAW_VALUES["logged_model"] = logged_model_raw_value
