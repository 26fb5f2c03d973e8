"""The LLM price table: loading, validating and looking up per-model prices (USD per million tokens).

Only reads and checks the user's TOML file; it never invents a price (an unknown model is None, and a
bad file is a PriceTableError with one line saying what and where) and never computes a cost.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from contract.errors import InputError
from contract.textfile import read_text

DEFAULT_PRICES_PATH = Path(__file__).resolve().parents[1] / "prices.toml"
PRICE_FIELDS = ("input", "cached_input", "cache_write", "output")
TEXT_FIELDS = ("currency", "as_of", "source")
OPTIONAL_FIELDS = ("note", "fictional")
_AS_OF = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")

# A price per million tokens: the dearest model lists under $1,000 (o1-pro's output: $600); a thousand
# times that keeps the cost of any run's tokens (at most 1e15 of them) finite, where 1e308 printed "$inf".
MAX_PRICE_PER_M = 1_000_000.0


class PriceTableError(InputError):
    """A price file that cannot be used; str() is one line naming the file, the model and the fault."""


@dataclass(frozen=True)
class ModelPrice:
    """One model's list prices per million tokens, with where and when they were read."""

    model: str
    input: float
    cached_input: float  # cache reads (hits)
    cache_write: float  # cache creation (Anthropic); equal to input where the provider has no such charge
    output: float
    currency: str
    as_of: str  # YYYY-MM or YYYY-MM-DD
    source: str
    note: str = ""
    fictional: bool = False


@dataclass(frozen=True)
class PriceTable:
    """All models of one price file; `origin` names the file in reports."""

    origin: str
    prices: dict[str, ModelPrice]

    def lookup(self, model: str | None) -> ModelPrice | None:
        """Exact name first, then the normalised name (see normalise_model); never a nearest match."""
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        by_normal = {normalise_model(name): price for name, price in self.prices.items()}
        return by_normal.get(normalise_model(model))


def normalise_model(name: str) -> str:
    """Lower case, provider prefix dropped ("deepseek/x" -> "x"), dated snapshot suffix dropped.

    "DeepSeek/DeepSeek-V4-Flash" -> "deepseek-v4-flash"; "gpt-4o-mini-2024-07-18" -> "gpt-4o-mini";
    "claude-sonnet-4-20250514" -> "claude-sonnet-4". Nothing else is guessed.
    """
    base = name.strip().lower().rsplit("/", 1)[-1]
    return _DATE_SUFFIX.sub("", base)


def load_prices(path: str | Path = DEFAULT_PRICES_PATH) -> PriceTable:
    """Read and validate a TOML price file (the shipped one by default, or --prices FILE)."""
    return parse_prices(read_text(path, PriceTableError, "price table"), origin=str(path))


def parse_prices(text: str, origin: str = "<prices>") -> PriceTable:
    """Validate price-table TOML text; the first fault found is raised as one line."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceTableError(f"{origin}: not valid TOML ({exc})") from None
    models = document.get("models")
    if not isinstance(models, dict) or not models:
        raise PriceTableError(f'{origin}: no [models."<name>"] tables found')
    prices = {name: _model_price(name, entry, f"{origin}: models.{name}") for name, entry in models.items()}
    return PriceTable(origin=origin, prices=prices)


def _model_price(name: str, entry: object, where: str) -> ModelPrice:
    if not isinstance(entry, dict):
        raise PriceTableError(f"{where}: expected a table of fields, got {entry!r}")
    unknown = sorted(set(entry) - set(PRICE_FIELDS + TEXT_FIELDS + OPTIONAL_FIELDS))
    if unknown:
        raise PriceTableError(f"{where}: unknown field '{unknown[0]}'")
    for field in PRICE_FIELDS + TEXT_FIELDS:
        if field not in entry:
            raise PriceTableError(f"{where}: missing field '{field}'")
    return ModelPrice(
        model=name,
        **{field: _price(entry[field], f"{where}.{field}") for field in PRICE_FIELDS},
        currency=_text(entry["currency"], f"{where}.currency").upper(),
        as_of=_as_of(entry["as_of"], f"{where}.as_of"),
        source=_text(entry["source"], f"{where}.source"),
        note=_text(entry["note"], f"{where}.note") if "note" in entry else "",
        fictional=_flag(entry.get("fictional", False), f"{where}.fictional"),
    )


def _price(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceTableError(f"{where}: price must be a number (USD per million tokens), got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise PriceTableError(f"{where}: price must be zero or more, got {value!r}")
    if value > MAX_PRICE_PER_M:
        raise PriceTableError(
            f"{where}: price {value:g} is above the ceiling of {MAX_PRICE_PER_M:,.0f} per million tokens "
            "(the dearest model lists under 1,000; a larger one makes a run's cost infinite)"
        )
    return float(value)


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PriceTableError(f"{where}: must be non-empty text, got {value!r}")
    return value.strip()


def _as_of(value: object, where: str) -> str:
    """A TOML date or a "YYYY-MM" / "YYYY-MM-DD" string; prices without a date are not trusted."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str) and _AS_OF.match(value.strip()):
        return value.strip()
    raise PriceTableError(f"{where}: must be a date (YYYY-MM or YYYY-MM-DD), got {value!r}")


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise PriceTableError(f"{where}: must be true or false, got {value!r}")
    return value
