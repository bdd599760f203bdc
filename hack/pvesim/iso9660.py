"""Read the root directory of an ISO 9660 image, as Linux would mount it.

Volume descriptors start at sector 16 (2048-byte sectors).  Names come from
Rock Ridge NM entries when present, else from a Joliet supplementary
descriptor, else from the plain ISO 9660 identifiers mapped like Linux's
isofs map=normal (";1" and a trailing "." dropped, lower case).  So a plain
image naming its file USER_DAT.;1 does NOT provide "user-data" - as on a real
guest, cloud-init would not find it.
"""

import struct

SECTOR = 2048


class IsoError(Exception):
    pass


def _u32(b, off):
    return struct.unpack_from("<I", b, off)[0]


def _records(data, extent, size):
    pos = extent * SECTOR
    end = pos + size
    if end > len(data):
        raise IsoError("directory extent beyond end of image")
    while pos < end:
        ln = data[pos]
        if ln == 0:
            pos = (pos // SECTOR + 1) * SECTOR
            continue
        if ln < 34 or pos + ln > len(data):
            raise IsoError("bad directory record at %d" % pos)
        yield data[pos:pos + ln]
        pos += ln


def _rr_name(rec):
    nlen = rec[32]
    su = 33 + nlen + (1 if nlen % 2 == 0 else 0)
    name, found = b"", False
    while su + 4 <= len(rec):
        sig, ln = rec[su:su + 2], rec[su + 2]
        if ln < 4:
            break
        if sig == b"NM":
            flags = rec[su + 4]
            if not flags & 0x06:
                name += rec[su + 5:su + ln]
                found = True
        su += ln
    return name.decode("utf-8", "replace") if found else None


def _plain(name):
    if ";" in name:
        name = name.split(";", 1)[0]
    if name.endswith("."):
        name = name[:-1]
    return name.lower()


def read(data):
    """{'label': str, 'joliet_label': str|None, 'files': {name: bytes},
    'names': 'rockridge'|'joliet'|'iso9660'}; raises IsoError."""
    pvd = svd = None
    for n in range(16, 64):
        off = n * SECTOR
        if off + SECTOR > len(data):
            break
        d = data[off:off + SECTOR]
        if d[1:6] != b"CD001":
            raise IsoError("no ISO 9660 volume descriptor at sector %d" % n)
        if d[0] == 1 and pvd is None:
            pvd = d
        elif d[0] == 2 and d[88:91] in (b"%/@", b"%/C", b"%/E"):
            svd = d
        elif d[0] == 255:
            break
    if pvd is None:
        raise IsoError("no primary volume descriptor")
    label = pvd[40:72].decode("ascii", "replace").strip(" \0")
    root = pvd[156:190]
    files, rr = {}, {}
    for rec in _records(data, _u32(root, 2), _u32(root, 10)):
        nlen = rec[32]
        ident = rec[33:33 + nlen]
        if ident in (b"\0", b"\1") or rec[25] & 0x02:
            continue
        ext, size = _u32(rec, 2), _u32(rec, 10)
        body = data[ext * SECTOR:ext * SECTOR + size]
        rname = _rr_name(rec)
        plain = _plain(ident.decode("ascii", "replace"))
        files[plain] = body
        if rname is not None:
            rr[rname] = body
    result = {"label": label, "joliet_label": None}
    if rr:
        result["files"], result["names"] = rr, "rockridge"
    elif svd is not None:
        jfiles = {}
        jroot = svd[156:190]
        for rec in _records(data, _u32(jroot, 2), _u32(jroot, 10)):
            nlen = rec[32]
            ident = rec[33:33 + nlen]
            if ident in (b"\0", b"\1") or rec[25] & 0x02:
                continue
            name = ident.decode("utf-16-be", "replace")
            if ";" in name:
                name = name.split(";", 1)[0]
            ext, size = _u32(rec, 2), _u32(rec, 10)
            jfiles[name] = data[ext * SECTOR:ext * SECTOR + size]
        result["files"], result["names"] = jfiles, "joliet"
        result["joliet_label"] = svd[40:72].decode("utf-16-be", "replace").strip(" \0")
    else:
        result["files"], result["names"] = files, "iso9660"
    return result


def nocloud(data):
    """(user_data, meta_data, notes) of a NoCloud seed image, as cloud-init
    sees it: label cidata (or CIDATA), files user-data and meta-data."""
    notes = []
    try:
        iso = read(data)
    except IsoError as e:
        return None, None, ["not an ISO 9660 image: %s" % e]
    labels = {iso["label"], iso["joliet_label"]}
    if not labels & {"cidata", "CIDATA"}:
        return None, None, ["volume label %r is not cidata: cloud-init ignores this image"
                            % iso["label"]]
    files = iso["files"]
    ud, md = files.get("user-data"), files.get("meta-data")
    if ud is None:
        notes.append("no file 'user-data' on the image (names via %s: %s)"
                     % (iso["names"], ", ".join(sorted(files)) or "none"))
    if md is None:
        notes.append("no file 'meta-data' on the image")
    if ud is None or md is None:
        notes.append("cloud-init's NoCloud needs both user-data and meta-data: image ignored")
        return None, None, notes
    return ud, md, notes
