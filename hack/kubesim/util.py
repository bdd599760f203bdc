"""Small helpers shared by every module: JSON, time, names, quantities."""

import datetime
import json
import os
import random
import re
import time
import uuid
from fractions import Fraction

# ---------------------------------------------------------------- JSON

_enc = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def dumps(obj):
    """Compact JSON bytes, as the API server writes them."""
    return _enc.encode(obj).encode("utf-8")


def dumps_pretty(obj):
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def loads(data):
    return json.loads(data)


def deepcopy(obj):
    """Fast deep copy for JSON-shaped data."""
    t = type(obj)
    if t is dict:
        return {k: deepcopy(v) for k, v in obj.items()}
    if t is list:
        return [deepcopy(v) for v in obj]
    return obj


# ---------------------------------------------------------------- time

def now():
    return time.time()


def rfc3339(ts=None):
    """metav1.Time: seconds precision, UTC, 'Z'."""
    if ts is None:
        ts = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def rfc3339_micro(ts=None):
    """metav1.MicroTime: six fractional digits."""
    if ts is None:
        ts = time.time()
    sec = int(ts)
    micro = int(round((ts - sec) * 1e6))
    if micro >= 1000000:
        sec += 1
        micro -= 1000000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%06dZ" % micro


_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(s):
    """Parse an RFC 3339 timestamp to epoch seconds (float); ValueError if bad."""
    if not isinstance(s, str):
        raise ValueError("not a string")
    m = _TS_RE.match(s)
    if not m:
        raise ValueError('parsing time "%s" as "2006-01-02T15:04:05Z07:00": cannot parse' % s)
    y, mo, d, h, mi, se = (int(m.group(i)) for i in range(1, 7))
    frac = float(m.group(7)) if m.group(7) else 0.0
    tz = m.group(8)
    dt = datetime.datetime(y, mo, d, h, mi, se, tzinfo=datetime.timezone.utc)
    off = 0
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        off = sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return dt.timestamp() - off + frac


def human_duration(seconds):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    minutes = s // 60
    if minutes < 10:
        sec = s % 60
        return "%dm" % minutes if sec == 0 else "%dm%ds" % (minutes, sec)
    if minutes < 180:
        return "%dm" % minutes
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return "%dh" % hours if m == 0 else "%dh%dm" % (hours, m)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        h = hours % 24
        return "%dd" % (hours // 24) if h == 0 else "%dd%dh" % (hours // 24, h)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def age(ts_string, now_ts=None):
    if not ts_string:
        return "<unknown>"
    try:
        t = parse_time(ts_string)
    except ValueError:
        return "<invalid>"
    return human_duration((now_ts if now_ts is not None else time.time()) - t)


# ---------------------------------------------------------------- names

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
_rand = random.SystemRandom()


def random_suffix(n=5):
    return "".join(_rand.choice(_ALNUM) for _ in range(n))


def new_uid():
    return str(uuid.uuid4())


def random_token(nbytes=24):
    return os.urandom(nbytes).hex()


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def dns1123_label_errors(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(v):
        errs.append("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                    "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                    "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
    return errs


def dns1123_subdomain_errors(v):
    errs = []
    if len(v) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(v):
        errs.append("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                    "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'example.com', regex used for validation is "
                    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    return errs


def qualified_name_errors(v):
    """Label / annotation key syntax: [prefix/]name."""
    errs = []
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        errs.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    return errs


def label_value_errors(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(v):
        errs.append("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
                    "or 'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    return errs


# ---------------------------------------------------------------- quantities

_QTY_RE = re.compile(r"^([+-]?)([0-9]*\.?[0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_SUFFIX = {v: k for k, v in _DEC.items()}


class QuantityError(ValueError):
    pass


def _parse_qty(s):
    if not isinstance(s, str):
        if isinstance(s, bool):
            raise QuantityError("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        if isinstance(s, int):
            return Fraction(s), "DecimalSI"
        if isinstance(s, float):
            return Fraction(s).limit_denominator(10**9), "DecimalSI"
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    m = _QTY_RE.match(s.strip()) if s else None
    if not m or m.group(2) in ("", ".") or s != s.strip():
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    sign = -1 if m.group(1) == "-" else 1
    num = Fraction(m.group(2))
    suf = m.group(3) or ""
    if suf in _BIN:
        return sign * num * (2 ** _BIN[suf]), "BinarySI"
    if suf in _DEC:
        return sign * num * Fraction(10) ** _DEC[suf], "DecimalSI"
    exp = int(suf[1:])
    return sign * num * Fraction(10) ** exp, "DecimalExponent"


def parse_quantity(s):
    """Quantity string -> Fraction (exact).  Raises QuantityError."""
    return _parse_qty(s)[0]


def _ceil_nano(v):
    """The API server rounds anything finer than 1n up (away from zero)."""
    scaled = abs(v) * 10**9
    if scaled.denominator != 1:
        scaled = Fraction(-(-scaled.numerator // scaled.denominator))
    r = scaled / 10**9
    return -r if v < 0 else r


def canonical_quantity(s):
    """Quantity.String(): '1000m' -> '1', '0.5' -> '500m', '2048Ki' -> '2Mi'."""
    v, fmt = _parse_qty(s)
    v = _ceil_nano(v)
    if v == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < v < 1024 or v.denominator != 1:
            fmt = "DecimalSI"
        else:
            n = int(v)
            exp = 0
            while n % 1024 == 0 and exp < 60:
                n //= 1024
                exp += 10
            if exp == 0:
                return str(n)
            return str(n) + {10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}[exp]
    # decimal: mantissa * 10**exp, exp multiple of 3, factors of 10 moved out
    neg = v < 0
    if neg:
        v = -v
    exp = 0
    while v.denominator != 1:
        v *= 10
        exp -= 1
    n = int(v)
    while n != 0 and n % 10 == 0:
        n //= 10
        exp += 1
    while exp % 3 != 0:
        n *= 10
        exp -= 1
    sign = "-" if neg else ""
    if fmt == "DecimalExponent" or exp < -9 or exp > 18:
        return sign + str(n) + ("e%d" % exp if exp else "")
    return sign + str(n) + _DEC_SUFFIX[exp]


def quantity_or_zero(s):
    try:
        return parse_quantity(s)
    except (QuantityError, ValueError, TypeError):
        return Fraction(0)


# ---------------------------------------------------------------- misc

def get_path(obj, *path, default=None):
    for p in path:
        if isinstance(obj, dict):
            obj = obj.get(p)
        elif isinstance(obj, list) and isinstance(p, int) and 0 <= p < len(obj):
            obj = obj[p]
        else:
            return default
        if obj is None:
            return default
    return obj


def int_or_percent(value, total, round_up):
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, bool):
        raise ValueError("invalid value")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            p = int(value[:-1])
        except ValueError:
            raise ValueError("invalid value for IntOrString: invalid value %r" % value)
        num = Fraction(p * total, 100)
        if round_up:
            return -(-num.numerator // num.denominator)
        return num.numerator // num.denominator
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
