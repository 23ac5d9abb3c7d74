"""Which GPU a trace ran on: the hardware table (built in: `optrace/ingest/targets.yaml`) and the rules for reading it.

Hardware is named in many places (solution.json, the evaluator's `environment.hardware`,
framework_baseline.json, README "Task Context" lines, the workspace name, the trace sheet, config),
each in its own spelling. Every text is matched against the table by whole tokens only: the
reference's substring match turned "NVIDIA GB200" into b200 and found nothing in "H20" or "sm_90".
Nothing found means None, never a guess; the caller turns that into an error naming the trace.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from optrace import DEFAULT_TARGETS, SCHEMAS
from optrace.contracts import Check, compile_schema
from optrace.errors import InputError

if TYPE_CHECKING:
    import jsonschema

# libyaml when present: the table is read by every ingest job
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TARGETS_SCHEMA = SCHEMAS / "targets.schema.yaml"

# The knowledge store's scope vocabulary (record schema `retrieval.scope.arch`) and each arch's vendor;
# `generic` belongs to no vendor. The table may hold further arches (ada, volta, ...) that the store
# cannot scope: they are valid targets, and callers warn that their records cannot be scoped.
STORE_ARCH_VENDOR: dict[str, str | None] = {
    "ampere": "nvidia",
    "hopper": "nvidia",
    "blackwell": "nvidia",
    "blackwell-ultra": "nvidia",
    "blackwell-geforce": "nvidia",
    "cdna3": "amd",
    "cdna4": "amd",
    "rdna4": "amd",
    "generic": None,
}
VENDORS = ("nvidia", "amd", "generic")
ANY_PRODUCT = "any"  # product of a target known only down to its architecture

_SEPARATORS = re.compile(r"[^0-9a-z]+")  # `_`, `-`, space, `/`, and any other punctuation
_BASIS_TEXT_MAX = 80


@dataclass(frozen=True)
class Part:
    """One row of the table: a product, or (product `any`) an architecture named by a token."""

    product: str
    vendor: str
    arch: str
    cc: str | None = None  # NVIDIA compute capability, e.g. sm_90
    gfx: str | None = None  # AMD ISA target, e.g. gfx942
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Target:
    """The hardware a trace is scoped to, and a sentence saying where that came from."""

    vendor: str
    arch: str
    product: str
    basis: str
    isa: str | None = None  # the product's compute capability (sm_90) or gfx target, when a product is known


def in_store_vocabulary(arch: str) -> bool:
    """Can a record be scoped to this arch? Not ada, volta, ...: the table knows them, the store does not."""
    return arch in STORE_ARCH_VENDOR


def tokens(text: str) -> tuple[str, ...]:
    """Lower-case and split on every non-alphanumeric run, so `NVIDIA_H100` == `nvidia h100`."""
    return tuple(t for t in _SEPARATORS.split(text.lower()) if t)


def _token_spans(toks: Sequence[str], index: dict, longest: int) -> list[tuple[int, int]]:
    """Non-overlapping (start, length) spans of `toks` that are keys of `index`, longest claimed first.

    Longest first is what makes "RX 9070 XT" the XT rather than the RX 9070 inside it.
    """
    candidates = [
        (start, length)
        for start in range(len(toks))
        for length in range(1, min(longest, len(toks) - start) + 1)
        if tuple(toks[start : start + length]) in index
    ]
    taken: set[int] = set()
    chosen = []
    for start, length in sorted(candidates, key=lambda s: (-s[1], s[0])):
        cover = set(range(start, start + length))
        if not cover & taken:
            taken |= cover
            chosen.append((start, length))
    return sorted(chosen)


def _distinct(items: Iterable) -> list:
    return list(dict.fromkeys(items))


class HardwareTable:
    """The validated hardware table with its spelling indexes. Build with `load` or `from_document`."""

    def __init__(self, parts: dict[str, Part], arch_tokens: dict[tuple[str, ...], tuple[str, str]]):
        self._parts = parts
        self._by_spelling: dict[tuple[str, ...], str] = {}
        for part in parts.values():
            for spelling in (part.product, *part.aliases):
                self._by_spelling[tokens(spelling)] = part.product
        self._arch_tokens = arch_tokens
        self._longest_spelling = max(map(len, self._by_spelling), default=1)
        self._longest_arch_token = max(map(len, arch_tokens), default=1)

    # ------------------------------------------------------------------ construction

    @classmethod
    def load(cls, path: str | Path | None = None) -> HardwareTable:
        """The table at `path`; the built-in one when no path (or an empty one) is given."""
        path = path or DEFAULT_TARGETS
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(path, "hardware table not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(path, f"hardware table not readable ({exc})") from None
        try:
            doc = yaml.load(text, Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark else ""
            raise InputError(path, f"hardware table is not valid YAML{at}") from None
        return cls.from_document(doc, path)

    @classmethod
    def from_document(cls, doc: Any, where: str | Path = "hardware table") -> HardwareTable:
        """Validate a parsed table (schema first, then the cross-entry rules) and index it."""
        # the compiled validator answers "valid?" (every run); jsonschema, imported only for a table
        # that fails, names the problem
        errors = sorted(_targets_validator().iter_errors(doc), key=_error_order) if _targets_check()(doc) else []
        if errors:
            more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
            raise InputError(where, _describe_schema_error(doc, errors[0]) + more)
        _check_arch_vendors(doc, where)
        arch_tokens = _index_arch_tokens(doc["arch_tokens"], where)
        return cls(_index_products(doc["products"], arch_tokens, where), arch_tokens)

    # ------------------------------------------------------------------ lookups

    @property
    def products(self) -> tuple[str, ...]:
        return tuple(sorted(self._parts))

    def part(self, product: str) -> Part:
        return self._parts[product]

    def arch_vendors(self) -> dict[str, str | None]:
        """Every arch a target may have (store vocabulary plus the table's extras) -> its vendor."""
        extras = {arch: vendor for vendor, arch in self._arch_tokens.values()}
        extras.update({p.arch: p.vendor for p in self._parts.values()})
        return {**extras, **STORE_ARCH_VENDOR}

    def find_all(self, text: str) -> list[Part]:
        """Every product the text names, in order of appearance (whole-token sequences only)."""
        toks = tokens(text)
        spans = _token_spans(toks, self._by_spelling, self._longest_spelling)
        names = _distinct(self._by_spelling[tuple(toks[s : s + n])] for s, n in spans)
        return [self._parts[name] for name in names]

    def match(self, text: str) -> Part | None:
        """The one product the text names; None when it names none or several (see `find_all`)."""
        toks = tokens(text)
        exact = self._by_spelling.get(toks)
        if exact:  # a whole-string spelling wins, e.g. "AMD Instinct MI250X/MI250"
            return self._parts[exact]
        found = self.find_all(text)
        return found[0] if len(found) == 1 else None

    def find_arch_tokens(self, text: str) -> list[Part]:
        """Every architecture the text names by token (`sm_90`, `gfx942`, `hopper`), as `any` parts."""
        toks = tokens(text)
        spans = _token_spans(toks, self._arch_tokens, self._longest_arch_token)
        found = _distinct(self._arch_tokens[tuple(toks[s : s + n])] for s, n in spans)
        return [Part(ANY_PRODUCT, vendor, arch) for vendor, arch in found]

    def match_arch_token(self, text: str) -> Part | None:
        """The one architecture the text names by token; None when none or several."""
        found = self.find_arch_tokens(text)
        return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------------- resolution


def _basis(source: str, text: str) -> str:
    shown = " ".join(text.split())
    if len(shown) > _BASIS_TEXT_MAX:
        shown = shown[: _BASIS_TEXT_MAX - 1] + "…"
    return f'{source} "{shown}"'


def _texts(candidates: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    # Sources are parsed JSON/YAML; a number or null where a name was expected simply names nothing.
    return [(source, text) for source, text in candidates if isinstance(text, str)]


def resolve(candidates: list[tuple[str, str]], table: HardwareTable) -> Target | None:
    """The target named by the first (source, text) candidate that names one product.

    Candidates are in priority order. Architecture tokens count only when no candidate names a
    product, and then give product `any`. Use `products_named` to warn when sources disagree.
    """
    texts = _texts(candidates)
    for source, text in texts:
        part = table.match(text)
        if part:
            return Target(part.vendor, part.arch, part.product, _basis(source, text), part.cc or part.gfx)
    for source, text in texts:
        part = table.match_arch_token(text)
        if part:
            basis = _basis(source, text) + " (architecture only, product unknown)"
            return Target(part.vendor, part.arch, ANY_PRODUCT, basis)
    return None


def products_named(candidates: list[tuple[str, str]], table: HardwareTable) -> list[tuple[str, str]]:
    """Every (source, product) the candidates name, including each product of an ambiguous text."""
    return [(source, part.product) for source, text in _texts(candidates) for part in table.find_all(text)]


def target_from_override(
    vendor: str | None,
    arch: str | None,
    product: str | None,
    table: HardwareTable,
    where: str = "hardware override",
) -> Target:
    """A target the user stated (trace sheet row, config `hardware`), checked against the table.

    A product resolves through the table and must agree with any vendor/arch also given. Without a
    product, arch is required (a name like `hopper` or a token like `sm_90`) and vendor, if given, must
    be its vendor. Anything else raises InputError naming the value and listing the valid ones.
    """
    vendor, arch, product = (_blank_to_none(v) for v in (vendor, arch, product))
    if product and product.lower() != ANY_PRODUCT:
        return _override_by_product(vendor, arch, product, table, where)
    if not arch:
        raise InputError(where, "state a product (e.g. h100) or an arch (e.g. hopper); got neither")
    arch_vendors = table.arch_vendors()
    arch_name = _override_arch_name(arch, arch_vendors, table, where)
    vendor_name = _override_vendor(vendor, arch_name, arch_vendors[arch_name], where)
    basis = f'{where}: arch "{arch}"' + (f', vendor "{vendor}"' if vendor else "")
    return Target(vendor_name, arch_name, ANY_PRODUCT, basis)


def _blank_to_none(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _override_by_product(
    vendor: str | None, arch: str | None, product: str, table: HardwareTable, where: str
) -> Target:
    part = table.match(product)
    if part is None:
        several = [p.product for p in table.find_all(product)]
        why = "is not in the hardware table"
        if len(several) > 1:
            why = f"names several products ({', '.join(several)})"
        raise InputError(where, f'product "{product}" {why}; known products: {", ".join(table.products)}')
    for given, actual, field in ((vendor, part.vendor, "vendor"), (arch, part.arch, "arch")):
        if given and given.lower() != actual:
            raise InputError(
                where,
                f'{field} "{given}" contradicts product "{product}", which is {part.vendor}/{part.arch}',
            )
    return Target(part.vendor, part.arch, part.product, f'{where}: product "{product}"', part.cc or part.gfx)


def _override_arch_name(arch: str, arch_vendors: dict[str, str | None], table: HardwareTable, where: str) -> str:
    name = arch.lower()
    if name in arch_vendors:
        return name
    by_token = table.match_arch_token(arch)  # `sm_90`, `gfx942`
    if by_token:
        return by_token.arch
    raise InputError(where, f'arch "{arch}" is not known; valid arches: {", ".join(sorted(arch_vendors))}')


def _override_vendor(vendor: str | None, arch: str, arch_vendor: str | None, where: str) -> str:
    if vendor is None:
        return arch_vendor or "generic"
    name = vendor.lower()
    if name not in VENDORS:
        raise InputError(where, f'vendor "{vendor}" is not known; valid vendors: {", ".join(VENDORS)}')
    # Vendor generic goes only with arch generic; arch generic goes with any vendor; a real arch with its own.
    if name == "generic" and arch != "generic":
        raise InputError(where, f'vendor "{vendor}" needs arch generic, got "{arch}"')
    if arch_vendor is not None and name != arch_vendor:
        raise InputError(where, f'vendor "{vendor}" does not make arch "{arch}" (that is {arch_vendor})')
    return name


# ---------------------------------------------------------------------- table validation


@functools.lru_cache(maxsize=1)
def _targets_schema() -> dict:
    try:
        return yaml.load(TARGETS_SCHEMA.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except FileNotFoundError:
        raise InputError(TARGETS_SCHEMA, "schema not found") from None


@functools.lru_cache(maxsize=1)
def _targets_check() -> Check:
    return compile_schema(_targets_schema())


@functools.lru_cache(maxsize=1)
def _targets_validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # its imports are paid only to describe a table that fails

    jsonschema.Draft202012Validator.check_schema(_targets_schema())
    return jsonschema.Draft202012Validator(_targets_schema())


def _error_order(error: jsonschema.ValidationError) -> list[tuple[bool, str | int]]:
    # Report the first problem in file order; ints (list indexes) and strs never share a position.
    return [(isinstance(p, str), p) for p in error.absolute_path]


def _entry_label(doc: Any, path: list) -> tuple[str, list]:
    """('product "h100" (products[3])', rest-of-path) for a path into the table."""
    if len(path) >= 2 and path[0] in ("products", "arch_tokens") and isinstance(path[1], int):
        section, index = path[0], path[1]
        entry = doc[section][index]
        label = f"{section}[{index}]"
        if isinstance(entry, dict):
            if section == "products" and isinstance(entry.get("product"), str):
                label = f'product "{entry["product"]}" ({label})'
            elif section == "arch_tokens" and isinstance(entry.get("arch"), str):
                label = f"{label} (arch {entry['arch']})"
        return label, path[2:]
    return ("table" if not path else str(path[0])), path[1:]


def _describe_schema_error(doc: Any, error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    label, rest = _entry_label(doc, path)
    field = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(rest))
    # cc on an AMD part or gfx on an NVIDIA one; jsonschema leaves the key out of the path.
    if error.schema is False:
        vendor = doc[path[0]][path[1]].get("vendor")
        return f"{label}: {'gfx' if vendor == 'nvidia' else 'cc'} is not allowed for vendor {vendor}"
    return f"{label}: {field + ': ' if field else ''}{error.message}"


def _check_arch_vendors(doc: Any, where: str | Path) -> None:
    """Each arch belongs to one vendor: the store's for its vocabulary, otherwise the first that claims it."""
    seen: dict[str, str] = {}
    entries = [("products", i, e) for i, e in enumerate(doc["products"])]
    entries += [("arch_tokens", i, e) for i, e in enumerate(doc["arch_tokens"])]
    for section, index, entry in entries:
        arch, vendor = entry["arch"], entry["vendor"]
        expected = STORE_ARCH_VENDOR.get(arch) or seen.setdefault(arch, vendor)
        if vendor != expected:
            label, _ = _entry_label(doc, [section, index])
            raise InputError(where, f"{label}: arch {arch} is {expected}, not {vendor}")


def _index_arch_tokens(entries: list[dict], where: str | Path) -> dict[tuple[str, ...], tuple[str, str]]:
    index: dict[tuple[str, ...], tuple[str, str]] = {}
    for i, entry in enumerate(entries):
        value = (entry["vendor"], entry["arch"])
        for token in entry["tokens"]:
            key = tokens(token)
            if index.setdefault(key, value) != value:
                label = f"arch_tokens[{i}] (arch {entry['arch']})"
                raise InputError(where, f'{label}: token "{token}" is already arch {index[key][1]}')
    return index


def _index_products(
    entries: list[dict], arch_tokens: dict[tuple[str, ...], tuple[str, str]], where: str | Path
) -> dict[str, Part]:
    parts: dict[str, Part] = {}
    owner: dict[tuple[str, ...], str] = {}
    for i, entry in enumerate(entries):
        name = entry["product"]
        label = f'product "{name}" (products[{i}])'
        if name in parts:
            raise InputError(where, f"{label}: duplicate product key")
        for spelling in (name, *entry["aliases"]):
            key = tokens(spelling)
            if key in arch_tokens:
                raise InputError(where, f'{label}: "{spelling}" is an arch token, not a product spelling')
            if owner.setdefault(key, name) != name:
                taken = f'is already a spelling of product "{owner[key]}"'
                raise InputError(where, f'{label}: "{spelling}" {taken}')
        isa = entry.get("cc") or entry.get("gfx")
        assert isa is not None  # the schema requires cc of an nvidia product, gfx of an amd one
        # The ISA must be listed under the same arch, which catches a product filed under the wrong arch.
        listed = arch_tokens.get(tokens(isa))
        if listed != (entry["vendor"], entry["arch"]):
            found = f"arch {listed[1]}" if listed else "no arch token"
            problem = f"{isa} is {found} in arch_tokens, but the product says {entry['arch']}"
            raise InputError(where, f"{label}: {problem}")
        parts[name] = Part(
            product=name,
            vendor=entry["vendor"],
            arch=entry["arch"],
            cc=entry.get("cc"),
            gfx=entry.get("gfx"),
            aliases=tuple(entry["aliases"]),
        )
    return parts
