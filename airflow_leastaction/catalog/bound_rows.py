"""Many rows bound as a table in a few parameters, so a statement compiles once whatever their number.

A VALUES list of N rows is N x columns bound parameters: SQLAlchemy compiles (and the driver renders)
that statement anew for every N, which cost seconds at 10,000 windows and most of a 100-dependency
attempt's audit write. Bound this way the rows are one JSON array unpacked by ``json_each`` on SQLite,
or one array per column unpacked by ``unnest`` on PostgreSQL, and the statement's text is the same for
any number of rows.

On PostgreSQL each column's array is bound as one array literal (text, cast to the column's array type
in the statement): psycopg2 adapts a Python list element by element (a timestamp array of 10,000 took
about 0.07 s to adapt and as long again for the server to parse its casts), the literal is one string.
It is still a bound parameter: every element is quoted and escaped as the array input syntax wants.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

from sqlalchemy import BigInteger, DateTime, Integer, String, Text, bindparam, cast, func
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine


class BoundRows:
    """Rows of ``columns`` as a selectable: ``table`` to select from, ``columns`` in the order given and
    ``order`` (the rows' position) to keep them in that order; :meth:`params` binds a list of rows to it.
    Built once per dialect, table name and columns (:func:`bound_rows`), like the statements using it."""

    def __init__(self, dialect: Dialect, name: str, columns: Sequence[tuple[str, TypeEngine]]):
        self.name = name
        self.names = [c for c, _ in columns]
        # Each value as binding it to its column would send it (UTC text on SQLite; a naive datetime refused).
        self._procs = [type_.dialect_impl(dialect).bind_processor(dialect) for _, type_ in columns]
        self._sqlite = dialect.name == "sqlite"
        if self._sqlite:
            w = func.json_each(bindparam(f"{name}_rows", type_=String)).table_valued("value", "key").alias(name)
            self.table, self.order = w, w.c.key
            self.columns = tuple(func.json_extract(w.c.value, f"$[{i}]") for i in range(len(self.names)))
        elif dialect.name == "postgresql":
            arrays = [cast(bindparam(f"{name}_{c}", type_=Text), ARRAY(_pg_element(t))) for c, t in columns]
            w = func.unnest(*arrays).table_valued(*self.names, with_ordinality="ord").render_derived(name=name)
            self.table, self.order = w, w.c.ord
            self.columns = tuple(w.c[c] for c in self.names)
        else:
            raise NotImplementedError(f"the catalog supports SQLite and PostgreSQL, not {dialect.name}")

    def encode(self, row: tuple) -> tuple:
        """``row`` as :meth:`params` binds it: a caller binding many rows that share values (the windows of
        parents on one schedule) encodes each distinct one once and passes ``encoded=True``."""
        values = (v if p is None or v is None else p(v) for v, p in zip(row, self._procs, strict=True))
        return tuple(values) if self._sqlite else tuple(map(_pg_array_element, values))

    def params(self, rows: Sequence[tuple], *, encoded: bool = False) -> dict:
        """The parameters binding ``rows`` (tuples in the columns' order; None for NULL), ``encoded`` already
        (:meth:`encode`) or not."""
        encoded_rows = rows if encoded else [self.encode(row) for row in rows]
        if self._sqlite:
            return {f"{self.name}_rows": json.dumps(encoded_rows)}
        values = list(zip(*encoded_rows, strict=True)) if encoded_rows else [() for _ in self.names]
        return {f"{self.name}_{c}": "{" + ",".join(v) + "}" for c, v in zip(self.names, values, strict=True)}


def _pg_array_element(value) -> str:
    """``value`` (as its column's bind processor left it) as one element of a PostgreSQL array literal."""
    if value is None:
        return "NULL"
    text = value.isoformat() if isinstance(value, dt.datetime) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_BUILT: dict[tuple, BoundRows] = {}


def bound_rows(dialect: Dialect, name: str, columns: Sequence[tuple[str, TypeEngine]]) -> BoundRows:
    """The :class:`BoundRows` of ``columns`` named ``name`` for ``dialect``.

    ``columns`` pairs a column name with the catalog column type its values are stored as (for example
    ``task_run.c.slot.type``): on SQLite each value goes into the JSON as the text or number that type
    stores, so comparing with or inserting into such a column is what binding the value there would be.
    """
    key = (type(dialect), dialect.name, name, tuple((c, id(t)) for c, t in columns))
    built = _BUILT.get(key)
    if built is None:
        built = _BUILT[key] = BoundRows(dialect, name, columns)
    return built


def _pg_element(type_: TypeEngine) -> TypeEngine:
    """The PostgreSQL array element type that ``unnest`` yields for a column of ``type_``."""
    impl = getattr(type_, "impl", type_)
    if isinstance(impl, DateTime):
        return DateTime(timezone=True)
    if isinstance(impl, BigInteger):
        return BigInteger()
    if isinstance(impl, Integer):
        return Integer()
    if isinstance(impl, String | Text):
        return Text()
    raise TypeError(f"no array type for a bound column of type {type_!r}")
