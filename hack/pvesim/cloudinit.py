"""What a booting guest takes from its cloud-init user-data and meta-data.

Understood (anything else is ignored, and noted):
- a k3s config file as user-data, or one written by cloud-config write_files
  (path containing "rancher"/"k3s" or content with k3s keys):
  node-name, node-label (list or string), node-taint, kubelet-arg
  (provider-id=..., node-labels=..., register-with-taints=...);
- cloud-config hostname / fqdn;
- command lines anywhere in the text (runcmd, bootcmd, INSTALL_K3S_EXEC, shell
  scripts): --node-name, --node-label, --node-labels=, --node-taint,
  --register-with-taints=, --kubelet-arg provider-id=..., --provider-id=;
- meta-data local-hostname and instance-id.
The YAML reader is a small subset (block maps and lists, flow lists,
quoted scalars, | and > block scalars, comments).
"""

import base64
import json
import re


# ------------------------------------------------------------- YAML subset
class _Line:
    def __init__(self, indent, text):
        self.indent = indent
        self.text = text


def _strip_comment(s):
    out, q = [], None
    for i, c in enumerate(s):
        if q:
            if c == q:
                q = None
        elif c in "'\"" and (i == 0 or s[i - 1] in " \t[{,:-"):
            q = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        out.append(c)
    return "".join(out).rstrip()


def _scalar(s):
    s = s.strip()
    if s == "" or s in ("~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if len(s) >= 2 and s[0] == "'" and s[-1] == "'":
        return s[1:-1].replace("''", "'")
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        body = s[1:-1]
        return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", lambda m: {
            "n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "r": "\r", "0": "\0"}.get(
            m.group(1), chr(int(m.group(1)[1:], 16)) if m.group(1).startswith("u") and
            len(m.group(1)) == 5 else m.group(1)), body)
    if s.startswith("[") and s.endswith("]"):
        return [_scalar(x) for x in _split_flow(s[1:-1])]
    if s.startswith("{") and s.endswith("}"):
        d = {}
        for item in _split_flow(s[1:-1]):
            if ":" in item:
                k, v = item.split(":", 1)
                d[_scalar(k)] = _scalar(v)
        return d
    return s


def _split_flow(s):
    items, cur, q, depth = [], [], None, 0
    for c in s:
        if q:
            cur.append(c)
            if c == q:
                q = None
            continue
        if c in "'\"":
            q = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    if "".join(cur).strip():
        items.append("".join(cur).strip())
    return items


_KEY_RE = re.compile(r"^((?:\"[^\"]*\"|'[^']*'|[^:#'\"][^:]*?)):(?:\s+(.*)|)$")


class _Parser:
    def __init__(self, text):
        self.raw = text.replace("\r\n", "\n").split("\n")
        self.lines = []
        for ln in self.raw:
            if ln.strip() in ("---", "..."):
                if self.lines:
                    break
                continue
            self.lines.append(ln)
        self.i = 0

    def _peek(self):
        while self.i < len(self.lines):
            ln = self.lines[self.i]
            t = _strip_comment(ln)
            if t.strip() == "":
                self.i += 1
                continue
            return _Line(len(t) - len(t.lstrip(" ")), t.strip())
        return None

    def parse(self):
        ln = self._peek()
        if ln is None:
            return None
        return self._node(ln.indent)

    def _node(self, indent):
        ln = self._peek()
        if ln is None or ln.indent < indent:
            return None
        if ln.text == "-" or ln.text.startswith("- "):
            return self._seq(ln.indent)
        if _KEY_RE.match(ln.text):
            return self._map(ln.indent)
        self.i += 1
        return _scalar(ln.text)

    def _block(self, style, parent_indent):
        out = []
        self.i += 1
        block_indent = None
        while self.i < len(self.lines):
            ln = self.lines[self.i]
            if ln.strip() == "":
                out.append("")
                self.i += 1
                continue
            ind = len(ln) - len(ln.lstrip(" "))
            if ind <= parent_indent:
                break
            if block_indent is None:
                block_indent = ind
            out.append(ln[min(ind, block_indent):])
            self.i += 1
        while out and out[-1] == "":
            out.pop()
        if style.startswith(">"):
            text = " ".join(x for x in out)
        else:
            text = "\n".join(out)
        if not style.endswith("-"):
            text += "\n"
        return text

    def _value(self, rest, indent):
        if rest is None or rest == "":
            self.i += 1
            nxt = self._peek()
            if nxt is None:
                return None
            if nxt.indent > indent or (nxt.indent == indent and
                                       (nxt.text == "-" or nxt.text.startswith("- "))):
                return self._node(nxt.indent)
            return None
        if rest[0] in "|>":
            return self._block(rest.strip(), indent)
        self.i += 1
        return _scalar(rest)

    def _map(self, indent):
        d = {}
        while True:
            ln = self._peek()
            if ln is None or ln.indent != indent:
                break
            m = _KEY_RE.match(ln.text)
            if not m:
                break
            key = _scalar(m.group(1))
            d[key] = self._value(m.group(2), indent)
        return d

    def _seq(self, indent):
        out = []
        while True:
            ln = self._peek()
            if ln is None or ln.indent != indent or not (ln.text == "-" or
                                                         ln.text.startswith("- ")):
                break
            rest = ln.text[1:].strip()
            if rest == "":
                self.i += 1
                nxt = self._peek()
                out.append(self._node(nxt.indent) if nxt and nxt.indent > indent else None)
            elif _KEY_RE.match(rest) and not rest.startswith(("'", '"', "[", "{")):
                # "- key: value" starts a map indented at the key's column
                col = indent + (len(ln.text) - len(rest))
                raw = self.lines[self.i]
                pos = raw.index("-", indent)
                self.lines[self.i] = raw[:pos] + " " + raw[pos + 1:]
                out.append(self._map(col))
            elif rest[0] in "|>":
                out.append(self._block(rest, indent))
            else:
                self.i += 1
                out.append(_scalar(rest))
        return out


def yaml_load(text):
    try:
        return _Parser(text).parse()
    except (IndexError, ValueError, RecursionError):
        return None


# ---------------------------------------------------------- k3s settings
K3S_KEYS = ("node-name", "node-label", "node-taint", "kubelet-arg", "with-node-id")


def _as_list(v):
    if v is None:
        return []
    if isinstance(v, list):
        return [str(x) for x in v if x is not None]
    return [str(v)]


def _unquote(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v


class Settings:
    def __init__(self):
        self.node_name = None
        self.hostname = None
        self.labels = {}
        self.taints = []
        self.provider_id = None
        self.with_node_id = False
        self.sources = []
        self.notes = []

    def add_label(self, s):
        if "=" in s:
            k, v = s.split("=", 1)
        else:
            k, v = s, ""
        k = k.strip()
        if k:
            self.labels[k] = v.strip()

    def add_taint(self, s):
        s = s.strip()
        if not s:
            return
        m = re.match(r"^([^=:]+)(?:=([^:]*))?(?::(\w+))?$", s)
        if not m:
            self.notes.append("unparsed taint %r" % s)
            return
        t = {"key": m.group(1), "effect": m.group(3) or "NoSchedule"}
        if m.group(2):
            t["value"] = m.group(2)
        if t not in self.taints:
            self.taints.append(t)

    def kubelet_arg(self, arg):
        arg = _unquote(arg).lstrip("-")
        if arg.startswith("provider-id="):
            self.provider_id = arg.split("=", 1)[1]
        elif arg.startswith("node-labels="):
            for kv in arg.split("=", 1)[1].split(","):
                self.add_label(kv)
        elif arg.startswith("register-with-taints="):
            for t in arg.split("=", 1)[1].split(","):
                self.add_taint(t)
        elif arg.startswith("hostname-override="):
            self.node_name = arg.split("=", 1)[1]

    def k3s_config(self, doc, source):
        if not isinstance(doc, dict) or not any(k in doc for k in K3S_KEYS):
            return False
        self.sources.append(source)
        if doc.get("node-name"):
            self.node_name = str(doc["node-name"])
        for lab in _as_list(doc.get("node-label")):
            self.add_label(lab)
        for t in _as_list(doc.get("node-taint")):
            self.add_taint(t)
        for a in _as_list(doc.get("kubelet-arg")):
            self.kubelet_arg(a)
        if doc.get("with-node-id"):
            self.with_node_id = True
        return True

    def scan_commands(self, text, source):
        found = False
        flag = r"""(?:=|\s+)("[^"]*"|'[^']*'|[^\s"']+)"""
        for m in re.finditer(r"--node-name" + flag, text):
            self.node_name = _unquote(m.group(1))
            found = True
        for m in re.finditer(r"--node-label(?!s)" + flag, text):
            self.add_label(_unquote(m.group(1)))
            found = True
        for m in re.finditer(r"--node-labels=" + r"""("[^"]*"|'[^']*'|[^\s"']+)""", text):
            for kv in _unquote(m.group(1)).split(","):
                self.add_label(kv)
            found = True
        for m in re.finditer(r"--node-taint" + flag, text):
            self.add_taint(_unquote(m.group(1)))
            found = True
        for m in re.finditer(r"--register-with-taints=" + r"""("[^"]*"|'[^']*'|[^\s"']+)""",
                             text):
            for t in _unquote(m.group(1)).split(","):
                self.add_taint(t)
            found = True
        for m in re.finditer(r"--kubelet-arg" + flag, text):
            self.kubelet_arg(m.group(1))
            found = True
        for m in re.finditer(r"(?<![\w-])--provider-id=" + r"""("[^"]*"|'[^']*'|[^\s"']+)""",
                             text):
            self.provider_id = _unquote(m.group(1))
            found = True
        for m in re.finditer(r"\bK3S_NODE_NAME=" + r"""("[^"]*"|'[^']*'|[^\s"';]+)""", text):
            self.node_name = _unquote(m.group(1))
            found = True
        if re.search(r"--with-node-id\b", text):
            self.with_node_id = True
        if found:
            self.sources.append(source)


def extract(user_data, meta_data):
    """Settings from user-data and meta-data bytes (either may be None)."""
    st = Settings()
    if meta_data:
        text = meta_data.decode("utf-8", "replace")
        md = None
        try:
            md = json.loads(text)
        except ValueError:
            md = yaml_load(text)
        if isinstance(md, dict):
            if md.get("local-hostname"):
                st.hostname = str(md["local-hostname"])
            st.instance_id = md.get("instance-id")
    if not user_data:
        return st
    text = user_data.decode("utf-8", "replace")
    if text.startswith("Content-Type: multipart"):
        st.notes.append("multipart user-data is not read by pve-sim")
        return st
    doc = None
    if not text.startswith("#!"):
        doc = yaml_load(text)
    if isinstance(doc, dict):
        st.k3s_config(doc, "user-data")
        if doc.get("hostname"):
            st.hostname = str(doc["hostname"])
        if doc.get("fqdn") and not doc.get("hostname"):
            st.hostname = str(doc["fqdn"]).split(".")[0]
        for wf in doc.get("write_files") or []:
            if not isinstance(wf, dict) or wf.get("content") is None:
                continue
            content = wf["content"]
            if isinstance(content, str) and str(wf.get("encoding", "")).lower() in (
                    "b64", "base64"):
                try:
                    content = base64.b64decode(content).decode("utf-8", "replace")
                except ValueError:
                    st.notes.append("bad base64 in write_files %s" % wf.get("path"))
                    continue
            sub = yaml_load(str(content))
            path = str(wf.get("path", ""))
            if not st.k3s_config(sub, "write_files:" + path) and \
                    ("rancher" in path or "k3s" in path):
                st.scan_commands(str(content), "write_files:" + path)
    st.scan_commands(text, "commands")
    return st
