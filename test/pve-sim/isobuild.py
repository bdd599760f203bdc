"""Build small ISO 9660 images for the tests (root directory files only).

names="rockridge": plain 8.3-ish identifiers plus Rock Ridge NM entries;
names="joliet": plain identifiers plus a Joliet supplementary descriptor;
names="plain": the given names written as-is (";1" appended);
names="mangled": USER_DAT.;1-style identifiers only (cloud-init can't see them).
"""

import struct

SECTOR = 2048


def both16(n):
    return struct.pack("<H", n) + struct.pack(">H", n)


def both32(n):
    return struct.pack("<I", n) + struct.pack(">I", n)


def dirrec(ident, extent, size, is_dir=False, su=b""):
    nlen = len(ident)
    pad = b"\0" if nlen % 2 == 0 else b""
    body = (b"\0" + both32(extent) + both32(size) + bytes([125, 1, 1, 0, 0, 0, 0]) +
            bytes([2 if is_dir else 0, 0, 0]) + both16(1) + bytes([nlen]) + ident + pad + su)
    ln = 1 + len(body)
    if ln % 2:
        body += b"\0"
        ln += 1
    return bytes([ln]) + body


def vd(vtype, label, root, total, joliet=False):
    d = bytearray(SECTOR)
    d[0] = vtype
    d[1:6] = b"CD001"
    d[6] = 1
    if joliet:
        lab = label.encode("utf-16-be")[:32].ljust(32, b"\0")
    else:
        lab = label.encode("ascii")[:32].ljust(32, b" ")
    d[8:40] = b" " * 32
    d[40:72] = lab
    d[80:88] = both32(total)
    if joliet:
        d[88:91] = b"%/E"
    d[120:124] = both16(1)
    d[124:128] = both16(1)
    d[128:132] = both16(SECTOR)
    d[156:156 + len(root)] = root
    d[881] = 1
    return bytes(d)


def mangle(name):
    base, _, ext = name.partition(".")
    base = "".join(c if c.isalnum() else "_" for c in base.upper())[:8]
    ext = "".join(c if c.isalnum() else "_" for c in ext.upper())[:3]
    return "%s.%s;1" % (base, ext)


def build(files, label="cidata", names="rockridge"):
    """files: {name: bytes}.  Returns the image bytes."""
    items = sorted(files.items())
    # layout: 16 system, 16 PVD, 17 SVD/term, 18 term, 19 root, 20 jroot, 21.. data
    data_start = 21
    extents, pos = [], data_start
    for _, body in items:
        extents.append(pos)
        pos += max(1, (len(body) + SECTOR - 1) // SECTOR)
    total = pos

    def root_dir(joliet):
        recs = [dirrec(b"\0", 20 if joliet else 19, SECTOR, True,
                       b"SP\x07\x01\xbe\xef\x00" if names == "rockridge" and not joliet
                       else b""),
                dirrec(b"\1", 20 if joliet else 19, SECTOR, True)]
        for (name, body), ext in zip(items, extents):
            if joliet:
                ident = name.encode("utf-16-be")
                su = b""
            elif names == "plain":
                ident = (name + ";1").encode("ascii")
                su = b""
            else:
                ident = mangle(name).encode("ascii")
                su = b""
                if names == "rockridge":
                    nm = name.encode()
                    su = b"NM" + bytes([5 + len(nm), 1, 0]) + nm
            recs.append(dirrec(ident, ext, len(body), False, su))
        blob = b"".join(recs)
        assert len(blob) <= SECTOR
        return blob.ljust(SECTOR, b"\0")

    img = bytearray(total * SECTOR)
    root_rec = dirrec(b"\0", 19, SECTOR, True)
    img[16 * SECTOR:17 * SECTOR] = vd(1, label, root_rec, total)
    if names == "joliet":
        img[17 * SECTOR:18 * SECTOR] = vd(2, label, dirrec(b"\0", 20, SECTOR, True), total,
                                          joliet=True)
        term = 18
    else:
        term = 17
    t = bytearray(SECTOR)
    t[0] = 255
    t[1:6] = b"CD001"
    t[6] = 1
    img[term * SECTOR:(term + 1) * SECTOR] = t
    img[19 * SECTOR:20 * SECTOR] = root_dir(False)
    if names == "joliet":
        img[20 * SECTOR:21 * SECTOR] = root_dir(True)
    for (_, body), ext in zip(items, extents):
        img[ext * SECTOR:ext * SECTOR + len(body)] = body
    return bytes(img)


def multipart(fields, file_field, filename, data, boundary="----pvesimBOUNDARY42"):
    out = []
    for k, v in fields.items():
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n"
                    % (boundary, k, v)).encode())
    out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n"
                % (boundary, file_field, filename)).encode())
    out.append(data + b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out), "multipart/form-data; boundary=" + boundary
