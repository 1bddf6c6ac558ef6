"""C string literals as the C compiler decodes them, for the generators that read NVIDIA/nccl's
source (gen-nccl-log-strings.py, gen-nccl-env.py): one decoder, so that both tables quote a
string alike."""

SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "?": "?", "e": "\x1b",
}


def decode_c_string(body):
    """Decode the C escapes of the text between the quotes of a literal."""
    out = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i + 1:j], 8)))
            i = j
        elif e == "x":
            j = i + 2
            while j < n and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(chr(int(body[i + 2:j], 16)) if j > i + 2 else "x")
            i = j
        elif e in "uU":
            width = 4 if e == "u" else 8
            h = body[i + 2:i + 2 + width]
            try:
                out.append(chr(int(h, 16)))
                i += 2 + width
            except ValueError:
                out.append(e)
                i += 2
        else:  # unknown escape: the compiler keeps the character
            out.append(e)
            i += 2
    return "".join(out)
