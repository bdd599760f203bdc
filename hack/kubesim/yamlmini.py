"""A small YAML subset: parse and emit, standard library only.

Covers what Kubernetes manifests use: block mappings and sequences,
multiple documents, plain / single- / double-quoted scalars (also spanning
lines), literal and folded block scalars with chomping and indentation
indicators, flow collections, comments, anchors, aliases, merge keys and the
!!str / !!int / !!float / !!bool / !!null tags.  Scalars resolve as
sigs.k8s.io/yaml (go-yaml v2, YAML 1.1) does: yes/no/on/off/y/n are
booleans, 0x.. and 0.. are hex and octal integers, and a float with an
integral value becomes an int (it goes through JSON there).

Not supported: complex keys ("? "), multi-line implicit keys, directives
other than %YAML/%TAG (ignored), custom tags (the tag is dropped).

    load(text)       -> one document (None if empty); error if several
    load_all(text)   -> list of documents (empty documents are skipped)
    dump(obj)        -> YAML text, keys sorted, like `kubectl get -o yaml`
"""

import base64
import json
import math
import re

__all__ = ["YAMLError", "load", "load_all", "dump", "dump_all"]


class YAMLError(ValueError):
    """Raised with a line number for any input the parser cannot read."""

    def __init__(self, msg, line=None):
        self.line = line
        super().__init__("yaml: line %d: %s" % (line, msg) if line else "yaml: " + msg)


# ---------------------------------------------------------------- scalars

_BOOL_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_BOOL_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_NULLS = {"", "~", "null", "Null", "NULL"}
_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_OCT_RE = re.compile(r"^[-+]?0[0-7_]+$")
_OCT2_RE = re.compile(r"^[-+]?0o[0-7_]+$")
_HEX_RE = re.compile(r"^[-+]?0x[0-9a-fA-F_]+$")
_BIN_RE = re.compile(r"^[-+]?0b[01_]+$")
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$")
_INF_RE = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
_NAN_RE = re.compile(r"^\.(nan|NaN|NAN)$")
_TIMESTAMP_RE = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")


def _num(f):
    """Floats with an integral value become ints, as after YAML->JSON in Go."""
    if isinstance(f, float) and math.isfinite(f) and f == int(f) and abs(f) < 2**63:
        return int(f)
    return f


def resolve_plain(s):
    """Resolve a plain (unquoted) scalar to a Python value."""
    if s in _NULLS:
        return None
    if s in _BOOL_TRUE:
        return True
    if s in _BOOL_FALSE:
        return False
    c = s[0]
    if c in "0123456789+-.":
        t = s.replace("_", "")
        try:
            if _INT_RE.match(s):
                return int(t)
            if _HEX_RE.match(s):
                return int(t.replace("0x", ""), 16) if t[0] not in "+-" else int(t[0] + t[3:], 16)
            if _OCT2_RE.match(s):
                return int(t.replace("0o", ""), 8) if t[0] not in "+-" else int(t[0] + t[3:], 8)
            if _OCT_RE.match(s):
                return int(t, 8)
            if _BIN_RE.match(s):
                return int(t.replace("0b", ""), 2) if t[0] not in "+-" else int(t[0] + t[3:], 2)
            if _FLOAT_RE.match(s) and any(ch.isdigit() for ch in s):
                return _num(float(t))
        except ValueError:
            pass
        if _INF_RE.match(s):
            return float("-inf") if s[0] == "-" else float("inf")
        if _NAN_RE.match(s):
            return float("nan")
    return s


_DQ_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
    "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}


def _unescape_dq(body, line):
    out = []
    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= n:
            raise YAMLError("bad escape at end of double-quoted scalar", line)
        e = body[i]
        if e in _DQ_ESCAPES:
            out.append(_DQ_ESCAPES[e])
            i += 1
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            hexs = body[i + 1:i + 1 + width]
            if len(hexs) != width or not all(h in "0123456789abcdefABCDEF" for h in hexs):
                raise YAMLError("bad \\%s escape in double-quoted scalar" % e, line)
            out.append(chr(int(hexs, 16)))
            i += 1 + width
        else:
            raise YAMLError("unknown escape \\%s in double-quoted scalar" % e, line)
    return "".join(out)


def _fold_lines(parts):
    """Join the physical lines of a multi-line flow scalar: one line break
    becomes a space, each further (empty) line a newline."""
    out = []
    pending_newlines = 0
    for idx, p in enumerate(parts):
        if idx == 0:
            out.append(p)
            continue
        if p == "":
            pending_newlines += 1
            continue
        if pending_newlines:
            out.append("\n" * pending_newlines)
            pending_newlines = 0
        elif out and not out[-1].endswith("\n"):
            out.append(" ")
        out.append(p)
    if pending_newlines:
        out.append("\n" * pending_newlines)
    return "".join(out)


# ---------------------------------------------------------------- parser

def _strip_comment(s):
    """Remove a trailing ' # comment' that is outside quotes."""
    if "#" not in s:
        return s.rstrip()
    in_s = in_d = False
    i = 0
    while i < len(s):
        ch = s[i]
        if in_d:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_d = False
        elif in_s:
            if ch == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                in_s = False
        else:
            if ch == '"':
                in_d = True
            elif ch == "'":
                in_s = True
            elif ch == "#" and (i == 0 or s[i - 1] in " \t"):
                return s[:i].rstrip()
        i += 1
    return s.rstrip()


def _indent_of(line):
    n = 0
    for ch in line:
        if ch == " ":
            n += 1
        elif ch == "\t":
            # tabs are not allowed for indentation in YAML
            return -1
        else:
            break
    return n


class _Merge:
    """Marker for '<<' merge-key values."""


class _Parser:
    def __init__(self, lines, first_lineno):
        self.lines = lines
        self.base = first_lineno
        self.i = 0
        self.anchors = {}

    # -- line helpers
    def lineno(self):
        return self.base + self.i

    def err(self, msg):
        raise YAMLError(msg, self.lineno())

    def skip_blank(self):
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s == "" or s.startswith("#"):
                self.i += 1
                continue
            break

    def at_end(self):
        self.skip_blank()
        return self.i >= len(self.lines)

    def cur(self):
        line = self.lines[self.i]
        ind = _indent_of(line)
        if ind < 0:
            stripped = line.lstrip(" ")
            if stripped.startswith("\t"):
                self.err("found a tab character where an indentation space is expected")
        return ind, line[ind:]

    # -- entry
    def parse_document(self):
        if self.at_end():
            return None
        ind, _ = self.cur()
        v = self.parse_node(ind)
        if not self.at_end():
            self.err("did not find expected <document start>; unexpected content")
        return v

    def parse_node(self, min_indent):
        """Parse the block node starting at the current (non-blank) line."""
        self.skip_blank()
        if self.i >= len(self.lines):
            return None
        ind, content = self.cur()
        if ind < min_indent:
            return None
        if content == "-" or content.startswith("- ") or content.startswith("-\t"):
            return self.parse_seq(ind)
        key = self.split_key(content)
        if key is not None:
            return self.parse_map(ind)
        return self.parse_inline_value(ind, content, ind - 1, as_block=True)

    # -- mappings
    def split_key(self, content):
        """If content is 'key: rest' or 'key:' return (key, rest) else None."""
        if not content:
            return None
        c = content[0]
        if c in "\"'":
            end = self._quoted_end(content, 0)
            if end is None:
                return None
            rest = content[end + 1:]
            rs = rest.lstrip(" ")
            if rs.startswith(":") and (len(rs) == 1 or rs[1] in " \t"):
                raw = content[:end + 1]
                key = self.scalar_from_quoted(raw)
                return key, rs[1:].lstrip(" ")
            return None
        if c in "[{":
            # flow key like {a: 1}: value is not supported; a flow node is a value
            return None
        if c in "#|>%@`" or (c in "?" and (len(content) == 1 or content[1] == " ")):
            if c == "?":
                self.err("complex keys ('? ') are not supported")
            return None
        # plain key: first ': ' (or ':' at end) outside of nothing special
        idx = 0
        while True:
            idx = content.find(":", idx)
            if idx < 0:
                return None
            if idx + 1 == len(content) or content[idx + 1] in " \t":
                break
            idx += 1
        keytext = content[:idx].rstrip()
        if " #" in keytext or keytext.startswith("#"):
            return None
        rest = content[idx + 1:].lstrip(" \t")
        tag = None
        if keytext.startswith("!!"):
            parts = keytext.split(None, 1)
            tag = parts[0]
            keytext = parts[1] if len(parts) > 1 else ""
        if keytext == "<<":
            return _Merge, rest
        # Kubernetes object keys are strings: keep the key text as written
        # (so a label key "y" or "on" stays a string).
        return keytext, rest

    def parse_map(self, ind):
        result = {}
        merges = []
        while True:
            self.skip_blank()
            if self.i >= len(self.lines):
                break
            cind, content = self.cur()
            if cind < ind:
                break
            if cind > ind:
                self.err("mapping values are not allowed in this context (bad indentation)")
            if content == "-" or content.startswith("- "):
                break
            kv = self.split_key(content)
            if kv is None:
                self.err("could not find expected ':'")
            key, rest = kv
            key_line = self.lineno()
            value = self.parse_value_after_indicator(ind, rest)
            if key is _Merge:
                merges.append(value)
                continue
            if isinstance(key, (dict, list)):
                self.err("unhashable mapping key")
            if isinstance(key, float) and math.isnan(key):
                key = "nan"
            if key is None:
                key = "null"
            if not isinstance(key, str):
                key = _key_string(key)
            if key in result:
                raise YAMLError('mapping key "%s" already defined' % key, key_line)
            result[key] = value
        for m in merges:
            items = m if isinstance(m, list) else [m]
            for it in items:
                if not isinstance(it, dict):
                    self.err("merge key value must be a mapping")
                for k, v in it.items():
                    result.setdefault(k, v)
        return result

    def parse_value_after_indicator(self, parent_indent, rest):
        """Value after 'key:' or '- ' on the same line; may continue below."""
        anchor = None
        tag = None
        rest = _strip_comment(rest) if not rest.startswith(("|", ">")) else rest
        while rest.startswith(("&", "!")):
            tok, _, remainder = rest.partition(" ")
            if tok.startswith("&"):
                anchor = tok[1:]
            else:
                tag = tok
            rest = remainder.lstrip(" ")
        if rest.startswith("*"):
            name = _strip_comment(rest)[1:].strip()
            self.i += 1
            if name not in self.anchors:
                self.err('unknown anchor "%s" referenced' % name)
            return self.anchors[name]
        if _strip_comment(rest) == "":
            self.i += 1
            self.skip_blank()
            value = None
            if self.i < len(self.lines):
                cind, content = self.cur()
                if cind > parent_indent:
                    value = self.parse_node(parent_indent + 1)
                elif cind == parent_indent and (content == "-" or content.startswith("- ")):
                    value = self.parse_seq(cind)
            value = _apply_tag(tag, value, self)
            if anchor:
                self.anchors[anchor] = value
            return value
        value = self.parse_inline_value(parent_indent, rest, parent_indent, tag=tag)
        if anchor:
            self.anchors[anchor] = value
        return value

    # -- sequences
    def parse_seq(self, ind):
        result = []
        while True:
            self.skip_blank()
            if self.i >= len(self.lines):
                break
            cind, content = self.cur()
            if cind != ind or not (content == "-" or content.startswith("- ") or content.startswith("-\t")):
                if cind > ind:
                    self.err("did not find expected '-' indicator")
                break
            rest = content[1:]
            stripped = rest.lstrip(" \t")
            if _strip_comment(stripped) == "":
                self.i += 1
                self.skip_blank()
                item = None
                if self.i < len(self.lines):
                    nind, _ = self.cur()
                    if nind > ind:
                        item = self.parse_node(ind + 1)
                result.append(item)
                continue
            col = ind + 1 + (len(rest) - len(stripped))
            if stripped.startswith(("&", "!", "*", "|", ">")):
                result.append(self.parse_value_after_indicator(ind, stripped))
                continue
            # re-read the rest of this line as a node at column `col`
            self.lines[self.i] = " " * col + stripped
            result.append(self.parse_node(col))
        return result

    # -- scalars and flow values
    def _quoted_end(self, s, start):
        q = s[start]
        i = start + 1
        while i < len(s):
            ch = s[i]
            if q == '"' and ch == "\\":
                i += 2
                continue
            if ch == q:
                if q == "'" and i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                return i
            i += 1
        return None

    def scalar_from_quoted(self, raw):
        if raw[0] == "'":
            return raw[1:-1].replace("''", "'")
        return _unescape_dq(raw[1:-1], self.lineno())

    def parse_inline_value(self, parent_indent, text, cont_indent, tag=None, as_block=False):
        """A value that starts on the current line at `text`.  Continuation
        lines must be indented more than `cont_indent`."""
        if text.startswith(("|", ">")):
            return _apply_tag(tag, self.parse_block_scalar(parent_indent, text), self)
        c = text[0]
        if c in "\"'":
            return _apply_tag(tag, self.parse_quoted_multiline(text, cont_indent), self)
        if c in "[{":
            return _apply_tag(tag, self.parse_flow_multiline(text, cont_indent), self)
        # plain scalar, possibly continued on following more-indented lines
        first = _strip_comment(text)
        parts = [first.strip()]
        self.i += 1
        ended_by_comment = first != text.rstrip()
        while not ended_by_comment and self.i < len(self.lines):
            raw = self.lines[self.i]
            if raw.strip() == "":
                parts.append("")
                self.i += 1
                continue
            ind = _indent_of(raw)
            if ind <= cont_indent:
                break
            body = raw[ind:]
            if body.startswith("#"):
                break
            if self.split_key(body) is not None:
                self.err("mapping values are not allowed in this context")
            stripped = _strip_comment(body)
            parts.append(stripped.strip())
            self.i += 1
            ended_by_comment = stripped != body.rstrip()
        while parts and parts[-1] == "":
            parts.pop()
        s = _fold_lines(parts)
        if tag == "!!str":
            return s
        return _apply_tag(tag, resolve_plain(s), self)

    def parse_quoted_multiline(self, text, cont_indent):
        q = text[0]
        buf = text
        start_line = self.i
        while True:
            end = self._quoted_end(buf, 0)
            if end is not None:
                break
            self.i += 1
            if self.i >= len(self.lines):
                self.i = start_line
                self.err("found unexpected end of stream while scanning a quoted scalar")
            buf = buf + "\n" + self.lines[self.i]
        raw = buf[:end + 1]
        trailing = _strip_comment(buf[end + 1:]).strip()
        if trailing:
            self.err("did not find expected key (junk after quoted scalar: %r)" % trailing)
        self.i += 1
        if "\n" not in raw:
            return self.scalar_from_quoted(raw)
        # multi-line quoted scalar: fold line breaks
        return _fold_quoted(raw[1:-1], q, self.lineno())

    def parse_flow_multiline(self, text, cont_indent):
        buf = _strip_comment(text)
        start_line = self.i
        while True:
            try:
                fp = _FlowParser(buf, self.lineno(), self.anchors)
                value = fp.parse()
                rest = buf[fp.pos:].strip()
                if rest:
                    self.err("did not find expected node content after flow collection: %r" % rest)
                self.i += 1
                return value
            except _NeedMore:
                self.i += 1
                if self.i >= len(self.lines):
                    self.i = start_line
                    self.err("did not find expected ',' or ']' / '}' (unterminated flow collection)")
                buf = buf + " " + _strip_comment(self.lines[self.i]).strip()

    def parse_block_scalar(self, parent_indent, header):
        header = header.strip()
        m = re.match(r"^([|>])([-+]?)([1-9]?)([-+]?)\s*(#.*)?$", header)
        if not m:
            self.err("invalid block scalar header %r" % header)
        style = m.group(1)
        chomp = m.group(2) or m.group(4)
        explicit = m.group(3)
        self.i += 1
        lines = []
        block_indent = None
        if explicit:
            block_indent = max(parent_indent, 0) + int(explicit)
            if parent_indent < 0:
                block_indent = int(explicit)
        while self.i < len(self.lines):
            raw = self.lines[self.i]
            if raw.strip() == "":
                lines.append("")
                self.i += 1
                continue
            ind = _indent_of(raw)
            if ind < 0:
                ind = len(raw) - len(raw.lstrip(" "))
            if block_indent is None:
                if ind <= parent_indent:
                    break
                block_indent = ind
            if ind < block_indent:
                break
            lines.append(raw[block_indent:])
            self.i += 1
        # trailing empty lines belong to chomping
        trailing = 0
        while lines and lines[-1].strip() == "":
            lines.pop()
            trailing += 1
        if style == "|":
            body = "\n".join(lines)
        else:
            out = []
            prev_more = False
            for idx, l in enumerate(lines):
                more = l.startswith((" ", "\t"))
                if idx == 0:
                    out.append(l)
                elif l == "":
                    out.append("\n")
                elif more or prev_more:
                    out.append("\n" + l)
                else:
                    if out and out[-1].endswith("\n"):
                        out.append(l)
                    else:
                        out.append(" " + l)
                prev_more = more and l != ""
            body = "".join(out)
        if not lines:
            return "" if chomp != "+" else "\n" * trailing
        if chomp == "-":
            return body
        if chomp == "+":
            return body + "\n" + "\n" * trailing
        return body + "\n"


def _fold_quoted(inner, q, line):
    """Fold a quoted scalar that spans lines (YAML flow folding)."""
    lines = inner.split("\n")
    n = len(lines)
    out = []
    pending = 0
    for idx, l in enumerate(lines):
        if idx > 0:
            l = l.lstrip(" \t")
        if idx < n - 1:
            l = l.rstrip(" \t")
        if idx == 0:
            out.append(l)
            continue
        prev_escaped = q == '"' and out and _ends_with_escape(out[-1])
        if l == "" and idx < n - 1:
            pending += 1
            continue
        if prev_escaped:
            out[-1] = out[-1][:-1]
        elif pending:
            out.append("\n" * pending)
        else:
            out.append(" ")
        pending = 0
        out.append(l)
    if pending:
        out.append("\n" * pending)
    text = "".join(out)
    if q == "'":
        return text.replace("''", "'")
    return _unescape_dq(text, line)


def _ends_with_escape(s):
    n = 0
    for ch in reversed(s):
        if ch != "\\":
            break
        n += 1
    return n % 2 == 1


class _NeedMore(Exception):
    pass


class _FlowParser:
    def __init__(self, s, line, anchors):
        self.s = s
        self.pos = 0
        self.line = line
        self.anchors = anchors

    def err(self, msg):
        raise YAMLError(msg, self.line)

    def ws(self):
        while self.pos < len(self.s) and self.s[self.pos] in " \t\n":
            self.pos += 1

    def parse(self):
        self.ws()
        return self.node(top=True)

    def node(self, top=False):
        self.ws()
        if self.pos >= len(self.s):
            raise _NeedMore()
        c = self.s[self.pos]
        anchor = None
        tag = None
        while c in "&!":
            j = self.pos
            while j < len(self.s) and self.s[j] not in " ,]}":
                j += 1
            tok = self.s[self.pos:j]
            if c == "&":
                anchor = tok[1:]
            else:
                tag = tok
            self.pos = j
            self.ws()
            if self.pos >= len(self.s):
                raise _NeedMore()
            c = self.s[self.pos]
        if c == "[":
            v = self.seq()
        elif c == "{":
            v = self.map()
        elif c in "\"'":
            v = self.quoted()
        elif c == "*":
            j = self.pos + 1
            while j < len(self.s) and self.s[j] not in " ,]}":
                j += 1
            name = self.s[self.pos + 1:j]
            self.pos = j
            if name not in self.anchors:
                self.err('unknown anchor "%s" referenced' % name)
            v = self.anchors[name]
        else:
            v = self.plain()
            if tag == "!!str":
                v = v if isinstance(v, str) else self._last_plain
        v = _apply_tag(tag, v, self) if tag != "!!str" or not isinstance(v, str) else v
        if anchor:
            self.anchors[anchor] = v
        return v

    def quoted(self):
        q = self.s[self.pos]
        i = self.pos + 1
        while i < len(self.s):
            ch = self.s[i]
            if q == '"' and ch == "\\":
                i += 2
                continue
            if ch == q:
                if q == "'" and i + 1 < len(self.s) and self.s[i + 1] == "'":
                    i += 2
                    continue
                raw = self.s[self.pos:i + 1]
                self.pos = i + 1
                if q == "'":
                    return raw[1:-1].replace("''", "'")
                return _unescape_dq(raw[1:-1], self.line)
            i += 1
        raise _NeedMore()

    def plain(self):
        j = self.pos
        while j < len(self.s):
            ch = self.s[j]
            if ch in ",[]{}":
                break
            if ch == ":" and (j + 1 >= len(self.s) or self.s[j + 1] in " ,]}"):
                break
            if ch == "#" and j > 0 and self.s[j - 1] == " ":
                break
            j += 1
        text = self.s[self.pos:j].strip()
        self.pos = j
        self._last_plain = text
        return resolve_plain(text)

    def seq(self):
        self.pos += 1
        out = []
        while True:
            self.ws()
            if self.pos >= len(self.s):
                raise _NeedMore()
            if self.s[self.pos] == "]":
                self.pos += 1
                return out
            item = self.node()
            self.ws()
            if self.pos < len(self.s) and self.s[self.pos] == ":":
                # single-pair mapping inside a flow sequence
                self.pos += 1
                val = self.node()
                item = {_key_string(item): val}
                self.ws()
            out.append(item)
            if self.pos >= len(self.s):
                raise _NeedMore()
            c = self.s[self.pos]
            if c == ",":
                self.pos += 1
            elif c != "]":
                self.err("did not find expected ',' or ']'")

    def map(self):
        self.pos += 1
        out = {}
        while True:
            self.ws()
            if self.pos >= len(self.s):
                raise _NeedMore()
            if self.s[self.pos] == "}":
                self.pos += 1
                return out
            key = self.node()
            self.ws()
            if self.pos >= len(self.s):
                raise _NeedMore()
            if self.s[self.pos] == ":":
                self.pos += 1
                self.ws()
                if self.pos < len(self.s) and self.s[self.pos] in ",}":
                    val = None
                else:
                    val = self.node()
            else:
                val = None
            k = _key_string(key)
            if k in out:
                self.err('mapping key "%s" already defined' % k)
            out[k] = val
            self.ws()
            if self.pos >= len(self.s):
                raise _NeedMore()
            c = self.s[self.pos]
            if c == ",":
                self.pos += 1
            elif c != "}":
                self.err("did not find expected ',' or '}'")


def _key_string(k):
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if k is True:
        return "true"
    if k is False:
        return "false"
    if isinstance(k, (dict, list)):
        raise YAMLError("unhashable mapping key")
    return json.dumps(k)


def _apply_tag(tag, value, p):
    if tag is None or tag in ("!!map", "!!seq"):
        return value
    if tag == "!!str":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return json.dumps(value)
        return value
    if tag == "!!int":
        try:
            return int(value)
        except (TypeError, ValueError):
            p.err("cannot decode %r as !!int" % (value,))
    if tag == "!!float":
        try:
            return _num(float(value))
        except (TypeError, ValueError):
            p.err("cannot decode %r as !!float" % (value,))
    if tag == "!!bool":
        if isinstance(value, bool):
            return value
        p.err("cannot decode %r as !!bool" % (value,))
    if tag == "!!null":
        return None
    if tag == "!!binary":
        return value
    return value  # unknown/custom tags are dropped


def _split_documents(text):
    """Yield (first_line_number, lines) per document."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    docs = []
    cur = []
    start = 1
    explicit = False
    for idx, line in enumerate(lines):
        if line.startswith("%") and not cur:
            continue
        if line == "---" or line.startswith("--- ") or line.startswith("---\t"):
            if cur or explicit:
                docs.append((start, cur))
            cur = []
            start = idx + 2
            explicit = True
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                cur.append(rest)
                start = idx + 1
            continue
        if line == "..." or line.startswith("... "):
            docs.append((start, cur))
            cur = []
            start = idx + 2
            explicit = False
            continue
        cur.append(line)
    docs.append((start, cur))
    return docs


def load_all(text):
    """Parse every document; empty documents are skipped (as kubectl does)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    out = []
    for start, lines in _split_documents(text):
        p = _Parser(list(lines), start)
        v = p.parse_document()
        if v is not None:
            out.append(v)
    return out


def load(text):
    """Parse a single document; JSON text is accepted (JSON is YAML)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    s = text.lstrip()
    if s.startswith("{") or s.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    docs = load_all(text)
    if not docs:
        return None
    if len(docs) > 1:
        raise YAMLError("expected a single document, found %d" % len(docs))
    return docs[0]


# ---------------------------------------------------------------- emitter

_PLAIN_SAFE_RE = re.compile(r"^[A-Za-z0-9_./$()=+~^@\\-][^\x00-\x1f\x7f]*$")


def _needs_quotes(s):
    if s == "":
        return True
    if s != s.strip() or "\n" in s or "\t" in s:
        return True
    if resolve_plain(s) is not s and not isinstance(resolve_plain(s), str):
        return True
    if isinstance(resolve_plain(s), str) and resolve_plain(s) != s:
        return True
    if _TIMESTAMP_RE.match(s):
        return True
    if s[0] in "-?:,[]{}#&*!|>'\"%@` ":
        if s[0] in "-?:" and len(s) > 1 and s[1] not in " \t":
            pass
        else:
            return True
    if ": " in s or " #" in s or s.endswith(":"):
        return True
    if any(ord(ch) < 0x20 or ord(ch) == 0x7f for ch in s):
        return True
    return False


def _quote(s):
    return json.dumps(s, ensure_ascii=False)


def _scalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        r = json.dumps(v)
        return r
    if isinstance(v, bytes):
        return _quote(base64.b64encode(v).decode())
    s = str(v)
    return _quote(s) if _needs_quotes(s) else s


def _key(k):
    k = str(k)
    return _quote(k) if _needs_quotes(k) and not _key_plain_ok(k) else k


def _key_plain_ok(k):
    # keys like k:{"name":"x"} or f:metadata are emitted plain by go-yaml
    return (k != "" and k == k.strip() and "\n" not in k and ": " not in k and " #" not in k
            and not k.endswith(":") and k[0] not in "-?,[]{}#&*!|>'\"%@` "
            and isinstance(resolve_plain(k), str) and not _TIMESTAMP_RE.match(k))


def _literal_ok(s):
    return "\n" in s and all(not l.endswith((" ", "\t")) for l in s.split("\n")) \
        and not s.startswith((" ", "\t")) and all(ord(ch) >= 0x20 or ch == "\n" for ch in s)


def _emit(v, indent, out, in_seq=False):
    pad = " " * indent
    if isinstance(v, dict):
        if not v:
            return "{}"
        first = True
        for k in sorted(v.keys()):
            val = v[k]
            prefix = "" if (first and in_seq) else pad
            first = False
            line = prefix + _key(k) + ":"
            if isinstance(val, dict) and val:
                out.append(line)
                _emit_block(val, indent + 2, out)
            elif isinstance(val, list) and val:
                out.append(line)
                _emit_block(val, indent, out)
            elif isinstance(val, str) and _literal_ok(val):
                _emit_literal(line, val, indent + 2, out)
            else:
                out.append(line + " " + _inline(val))
        return None
    if isinstance(v, list):
        if not v:
            return "[]"
        for item in v:
            if isinstance(item, dict) and item:
                sub = []
                _emit(item, indent + 2, sub, in_seq=True)
                out.append(pad + "- " + sub[0])
                out.extend(sub[1:])
            elif isinstance(item, list) and item:
                sub = []
                _emit(item, indent + 2, sub)
                out.append(pad + "- " + sub[0].lstrip())
                out.extend(sub[1:])
            elif isinstance(item, str) and _literal_ok(item):
                _emit_literal(pad + "-", item, indent + 2, out)
            else:
                out.append(pad + "- " + _inline(item))
        return None
    return _scalar(v)


def _emit_block(v, indent, out):
    _emit(v, indent, out)


def _emit_literal(prefix, s, indent, out):
    if s.endswith("\n"):
        stripped = s.rstrip("\n")
        extra = len(s) - len(stripped)
        chomp = "" if extra == 1 else "+"
    else:
        stripped = s
        chomp = "-"
    ind_ind = str(2) if stripped.startswith(" ") else ""
    out.append(prefix + " |" + ind_ind + chomp)
    pad = " " * indent
    for l in stripped.split("\n"):
        out.append(pad + l if l else "")
    if chomp == "+":
        for _ in range(len(s) - len(stripped) - 1):
            out.append("")


def _inline(v):
    if isinstance(v, dict):
        return "{}" if not v else json.dumps(v)
    if isinstance(v, list):
        return "[]" if not v else json.dumps(v)
    return _scalar(v)


def dump(obj):
    """Emit one document."""
    if not isinstance(obj, (dict, list)) or not obj:
        return _inline(obj) + "\n"
    out = []
    _emit(obj, 0, out)
    return "\n".join(out) + "\n"


def dump_all(objs):
    return "---\n".join(dump(o) for o in objs)
