"""Reading and writing IDX files (unsigned bytes, 1 or 3 dimensions), raw or
gzip, with the standard library only. Used by the dataset scripts here."""
import gzip
import struct


def read(path):
    """(dims, data bytes) of an IDX file; checks the header and the length."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] or raw[1] or raw[2] != 8 or raw[3] not in (1, 3):
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    nd = raw[3]
    dims = struct.unpack(">" + "I" * nd, raw[4:4 + 4 * nd])
    size = 1
    for d in dims:
        size *= d
    body = raw[4 + 4 * nd:]
    if len(body) != size:
        raise ValueError(f"{path}: {len(body)} data bytes, header says {size}")
    return dims, body


def encode(dims, data):
    """The IDX bytes for unsigned-byte data of the given dimensions."""
    return bytes([0, 0, 8, len(dims)]) + struct.pack(">" + "I" * len(dims), *dims) + bytes(data)


def write_gz(path, raw):
    """gzip with no name and no time stamp in its header, so it is the same
    file every time it is made."""
    with open(path, "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=out, mtime=0) as z:
            z.write(raw)
