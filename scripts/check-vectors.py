#!/usr/bin/env python3
"""Recomputes the conformance vectors in Vectors/ from their inputs, following PROTOCOL.md.

An implementation of its own, written from the specification rather than from the Swift code: the
datagram and frame codecs (sections 3, 3.1), the pose encoding (3.2), the Noise_XX handshake and the
secure channel (3.1, 3.3), the card encoding and digest (3.4), the cookie (5), recognition and the
verification code (6.5). Needs only the standard library and the `cryptography` package.

Prints one line per file and then `vectors: N passed, M failed`; exits 1 when any vector fails.
Vectors/README.md describes the files.
"""

import hashlib
import hmac
import json
import sys
import unicodedata
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

VECTORS = Path(__file__).resolve().parent.parent / "Vectors"

# Section 8: error codes by name.
ERROR_CODES = {
    "truncated": 1, "bad-magic": 2, "unsupported-version": 3, "unknown-type": 4, "malformed": 5,
    "oversized": 6, "trailing-bytes": 7, "unknown-session": 8, "authentication-failed": 9,
    "replayed": 10, "too-old": 11, "handshake-failed": 12, "token-mismatch": 13,
    "card-too-large": 14, "card-digest-mismatch": 15, "card-invalid": 16,
    "unexpected-message": 17, "rate-limited": 18, "table-full": 19, "own-datagram": 20,
    "commitment-mismatch": 21, "identity-proof-failed": 22, "conflict": 23,
}


class Drop(Exception):
    """A receiver drops the input and counts it under `code` (a section 8 name)."""

    def __init__(self, code, why=""):
        super().__init__(f"{code}: {why}")
        self.code = code


def unhex(text):
    return bytes.fromhex(text)


def uint(value, size):
    return value.to_bytes(size, "big")


def sint32(value):
    return value.to_bytes(4, "big", signed=True)


class Reader:
    """Reads fields in order; a field that does not fit is `truncated`."""

    def __init__(self, data):
        self.data = data
        self.offset = 0

    def take(self, count):
        if self.offset + count > len(self.data):
            raise Drop("truncated", f"{count} bytes needed at {self.offset}")
        piece = self.data[self.offset:self.offset + count]
        self.offset += count
        return piece

    def int(self, size):
        return int.from_bytes(self.take(size), "big")

    def sint32(self):
        return int.from_bytes(self.take(4), "big", signed=True)

    def remaining(self):
        return len(self.data) - self.offset

    def end(self):
        if self.remaining():
            raise Drop("trailing-bytes", f"{self.remaining()} bytes after the last field")


# --- Section 3: datagrams -------------------------------------------------------------------

MAX_DATAGRAM = 1200
# Protocol 2.1 is wire version 3 (PROTOCOL.md 3.5).
WIRE_VERSION = 3
PACKET_TYPES = {1: "BEACON", 2: "QUERY", 3: "INVITE", 4: "ACCEPT", 5: "CONFIRM", 6: "BUSY", 7: "SECURE",
                8: "PROBE", 9: "PROBE_ACK"}
PACKET_NUMBERS = {name: number for number, name in PACKET_TYPES.items()}
ROOM_LIMIT_CM = 100_000
INVITE_PADDED_NOISE = 98
# A QUERY is padded with zero bytes to at least this length.
QUERY_MINIMUM = 28


def query_padding(position, count):
    return max(0, QUERY_MINIMUM - (4 + 10 + (8 if position else 0) + 8 * count))


def read_id(reader):
    return reader.take(8).hex()


def read_position(reader):
    x, y = reader.sint32(), reader.sint32()
    if abs(x) > ROOM_LIMIT_CM or abs(y) > ROOM_LIMIT_CM:
        raise Drop("malformed", f"position ({x}, {y}) outside the room")
    return {"x_cm": x, "y_cm": y}


def parse_datagram(data):
    """Returns (type name, fields) or raises Drop."""
    if len(data) > MAX_DATAGRAM:
        raise Drop("oversized", f"{len(data)} bytes")
    reader = Reader(data)
    if reader.take(2) != b"PD":
        raise Drop("bad-magic")
    if reader.int(1) != WIRE_VERSION:
        raise Drop("unsupported-version")
    kind = PACKET_TYPES.get(reader.int(1))
    if kind is None:
        raise Drop("unknown-type")
    if kind == "BEACON":
        device, port, flags, sequence = read_id(reader), reader.int(2), reader.int(1), reader.int(4)
        if port == 0 or flags & ~0x03:
            raise Drop("malformed", "port 0 or reserved flags")
        position = read_position(reader) if flags & 0x02 else None
        fields = {"device_id": device, "port": port, "busy": bool(flags & 0x01), "sequence": sequence,
                  "position": position}
    elif kind == "QUERY":
        device, flags = read_id(reader), reader.int(1)
        if flags & ~0x01:
            raise Drop("malformed", "reserved flags")
        position = read_position(reader) if flags & 0x01 else None
        count = reader.int(1)
        if count > 147:
            raise Drop("oversized", f"{count} known answers")
        fields = {"device_id": device, "position": position,
                  "known_answers": [read_id(reader) for _ in range(count)]}
        if any(reader.take(query_padding(position, count))):
            raise Drop("malformed", "padding not zero")
    elif kind in ("INVITE", "ACCEPT", "CONFIRM"):
        fields = {"session_id": read_id(reader), "sender_id": read_id(reader),
                  "receiver_id": read_id(reader)}
        if kind == "INVITE":
            cookie = reader.take(16)
            fields["cookie"] = "" if cookie == bytes(16) else cookie.hex()
        length = reader.int(2)
        if length > (1154 if kind == "INVITE" else 1170):
            raise Drop("oversized", f"noise length {length}")
        fields["noise_message"] = reader.take(length).hex()
        if kind == "INVITE" and any(reader.take(max(0, INVITE_PADDED_NOISE - length))):
            raise Drop("malformed", "padding not zero")
    elif kind == "BUSY":
        fields = {"session_id": read_id(reader), "sender_id": read_id(reader),
                  "receiver_id": read_id(reader)}
        reason = reader.int(1)
        if reason not in (1, 2, 3, 4):
            raise Drop("malformed", f"reason {reason}")
        fields["reason"] = reason
        fields["cookie"] = reader.take(16).hex() if reason == 3 else ""
    elif kind in ("PROBE", "PROBE_ACK"):
        fields = {"challenge": read_id(reader)}
    else:  # SECURE
        fields = {"session_id": read_id(reader), "packet_number": read_id(reader)}
        length = reader.int(2)
        # The range 16...1178 of section 3; which code each side of it gets is the code's rule.
        if length > 1178:
            raise Drop("oversized", f"ciphertext length {length}")
        if length < 16:
            raise Drop("malformed", f"ciphertext length {length}")
        fields["ciphertext"] = reader.take(length).hex()
    reader.end()
    return kind, fields


def encode_position(position):
    return sint32(position["x_cm"]) + sint32(position["y_cm"])


def encode_datagram(kind, fields):
    out = b"PD" + bytes([WIRE_VERSION, PACKET_NUMBERS[kind]])
    if kind == "BEACON":
        position = fields["position"]
        flags = (1 if fields["busy"] else 0) | (2 if position is not None else 0)
        out += unhex(fields["device_id"]) + uint(fields["port"], 2) + bytes([flags])
        out += uint(fields["sequence"], 4) + (encode_position(position) if position else b"")
    elif kind == "QUERY":
        position = fields["position"]
        out += unhex(fields["device_id"]) + bytes([1 if position is not None else 0])
        out += encode_position(position) if position else b""
        out += bytes([len(fields["known_answers"])]) + b"".join(map(unhex, fields["known_answers"]))
        out += bytes(query_padding(position, len(fields["known_answers"])))
    elif kind in ("INVITE", "ACCEPT", "CONFIRM"):
        out += unhex(fields["session_id"]) + unhex(fields["sender_id"]) + unhex(fields["receiver_id"])
        noise = unhex(fields["noise_message"])
        if kind == "INVITE":
            out += unhex(fields["cookie"]) or bytes(16)
        out += uint(len(noise), 2) + noise
        if kind == "INVITE":
            out += bytes(max(0, INVITE_PADDED_NOISE - len(noise)))
    elif kind == "BUSY":
        out += unhex(fields["session_id"]) + unhex(fields["sender_id"]) + unhex(fields["receiver_id"])
        out += bytes([fields["reason"]]) + unhex(fields["cookie"])
    elif kind in ("PROBE", "PROBE_ACK"):
        out += unhex(fields["challenge"])
    else:
        ciphertext = unhex(fields["ciphertext"])
        out += unhex(fields["session_id"]) + unhex(fields["packet_number"]) + uint(len(ciphertext), 2)
        out += ciphertext
    return out


# --- Section 3.2: poses ---------------------------------------------------------------------

def round_half_away(value):
    magnitude = abs(value)
    whole = int(magnitude // 1)
    if magnitude - whole >= 0.5:
        whole += 1
    return -whole if value < 0 else whole


def encode_pose(x_cm, y_cm, heading_degrees):
    heading = heading_degrees % 360.0
    if heading >= 360.0:
        heading = 0.0
    x, y = round_half_away(x_cm * 10), round_half_away(y_cm * 10)
    return encode_pose_integers(x, y, round_half_away(heading * 100) % 36000)


def encode_pose_integers(x_mm, y_mm, hundredths):
    return (x_mm & 0xFFFFFF).to_bytes(3, "big") + (y_mm & 0xFFFFFF).to_bytes(3, "big") + uint(hundredths, 2)


def decode_pose(data):
    def axis(raw):
        if raw == 0x800000:
            raise Drop("malformed", "coordinate 0x800000")
        return raw - 0x1000000 if raw & 0x800000 else raw

    heading = int.from_bytes(data[6:8], "big")
    if heading >= 36000:
        raise Drop("malformed", f"heading {heading}")
    return {"x_mm": axis(int.from_bytes(data[0:3], "big")), "y_mm": axis(int.from_bytes(data[3:6], "big")),
            "heading_centidegrees": heading}


# --- Section 3.1: frames --------------------------------------------------------------------

FRAME_TYPES = {1: "TOKEN", 2: "RANGING", 3: "IN_RANGE", 4: "CONSENT", 5: "CARD_CHUNK", 6: "CARD_SACK",
               7: "CARD_ACK", 8: "CLOSE", 9: "CLOSE_ACK", 10: "RECEIPT", 11: "IDENT", 12: "PROOF",
               13: "COMMIT", 14: "NONCE", 15: "REVEAL", 16: "BOND"}
FRAME_NUMBERS = {name: number for number, name in FRAME_TYPES.items()}
# Frames whose bodies are named fixed-length byte strings.
FIXED_FRAMES = {"TOKEN": [("token", 16)], "CARD_ACK": [("digest", 32)], "IDENT": [("nonce", 16), ("tag", 16)],
                "PROOF": [("proof", 32)], "COMMIT": [("commitment", 32)], "NONCE": [("nonce", 32)],
                "REVEAL": [("nonce", 32)], "BOND": [("resolving_key", 32), ("share", 32)], "CLOSE_ACK": []}


def parse_frames(plaintext):
    if not plaintext:
        raise Drop("malformed", "no frame")
    reader = Reader(plaintext)
    frames = []
    while reader.remaining():
        kind = FRAME_TYPES.get(reader.int(1))
        if kind is None:
            raise Drop("unknown-type")
        frame = {"type": kind}
        if kind in FIXED_FRAMES:
            for name, size in FIXED_FRAMES[kind]:
                frame[name] = reader.take(size).hex()
        elif kind == "RANGING":
            frame["sequence"] = reader.int(4)
            frame["pose"] = decode_pose(reader.take(8))
            frame["token"] = reader.take(16).hex()
        elif kind == "IN_RANGE":
            frame["flag"] = reader.int(1)
            if frame["flag"] > 1:
                raise Drop("malformed")
        elif kind == "CONSENT":
            decision = reader.int(1)
            if decision not in (1, 2, 3):
                raise Drop("malformed", f"decision {decision}")
            frame["decision"] = decision
            frame["offer"] = None
            if decision == 1:
                length, chunk, digest = reader.int(4), reader.int(2), reader.take(32)
                if length == 0 or not 1 <= chunk <= 1157:
                    raise Drop("malformed", "offer")
                if -(-length // chunk) > 65535:
                    raise Drop("oversized", "too many chunks")
                frame["offer"] = {"length": length, "chunk_size": chunk, "digest": digest.hex()}
        elif kind == "CARD_CHUNK":
            frame["index"] = reader.int(2)
            length = reader.int(2)
            if length == 0:
                raise Drop("malformed", "empty chunk")
            frame["data"] = reader.take(length).hex()
        elif kind == "CARD_SACK":
            frame["cumulative"] = reader.int(2)
            length = reader.int(1)
            if length > 32:
                raise Drop("oversized", "bitmap")
            frame["bitmap"] = reader.take(length).hex()
        elif kind == "CLOSE":
            frame["code"] = reader.int(1)
            if frame["code"] > 4:
                raise Drop("malformed", "close code")
            frame["error_code"] = reader.int(2)
        elif kind == "RECEIPT":
            frame["flags"] = reader.int(1)
            if frame["flags"] & 0x80:
                raise Drop("malformed", "receipt bit 7")
        frames.append(frame)
    return frames


def encode_frames(frames):
    out = b""
    for frame in frames:
        kind = frame["type"]
        out += bytes([FRAME_NUMBERS[kind]])
        if kind in FIXED_FRAMES:
            out += b"".join(unhex(frame[name]) for name, _ in FIXED_FRAMES[kind])
        elif kind == "RANGING":
            pose = frame["pose"]
            out += uint(frame["sequence"], 4)
            out += encode_pose_integers(pose["x_mm"], pose["y_mm"], pose["heading_centidegrees"])
            out += unhex(frame["token"])
        elif kind == "IN_RANGE":
            out += bytes([frame["flag"]])
        elif kind == "CONSENT":
            out += bytes([frame["decision"]])
            offer = frame["offer"]
            if offer is not None:
                out += uint(offer["length"], 4) + uint(offer["chunk_size"], 2) + unhex(offer["digest"])
        elif kind == "CARD_CHUNK":
            data = unhex(frame["data"])
            out += uint(frame["index"], 2) + uint(len(data), 2) + data
        elif kind == "CARD_SACK":
            bitmap = unhex(frame["bitmap"])
            out += uint(frame["cumulative"], 2) + bytes([len(bitmap)]) + bitmap
        elif kind == "CLOSE":
            out += bytes([frame["code"]]) + uint(frame["error_code"], 2)
        elif kind == "RECEIPT":
            out += bytes([frame["flags"]])
    return out


# --- Hashes: BLAKE2b, HMAC over BLAKE2b-512 (6.5), Noise -------------------------------------

def blake2b_256(data):
    return hashlib.blake2b(data, digest_size=32).digest()


def blake2b_512(data):
    return hashlib.blake2b(data, digest_size=64).digest()


def hmac_blake2b(key, message):
    return hmac.new(key, message, hashlib.blake2b).digest()


def aead_nonce(counter):
    return bytes(4) + counter.to_bytes(8, "little")


class NoiseParty:
    """One side of Noise_XX_25519_ChaChaPoly_BLAKE2b (Noise revision 34)."""

    PATTERN = [["e"], ["e", "ee", "s", "es"], ["s", "se"]]

    def __init__(self, initiator, prologue, static_private):
        name = b"Noise_XX_25519_ChaChaPoly_BLAKE2b"
        self.h = name.ljust(64, b"\0")
        self.ck = self.h
        self.k = None
        self.n = 0
        self.initiator = initiator
        self.s = X25519PrivateKey.from_private_bytes(static_private)
        self.e = None
        self.rs = None
        self.re = None
        self.index = 0
        self.mix_hash(prologue)

    def mix_hash(self, data):
        self.h = blake2b_512(self.h + data)

    def hkdf(self, material, outputs):
        temp = hmac_blake2b(self.ck, material)
        out, previous = [], b""
        for index in range(1, outputs + 1):
            previous = hmac_blake2b(temp, previous + bytes([index]))
            out.append(previous)
        return out

    def mix_key(self, material):
        self.ck, temp = self.hkdf(material, 2)
        self.k, self.n = temp[:32], 0

    def encrypt_and_hash(self, plaintext):
        if self.k is None:
            ciphertext = plaintext
        else:
            ciphertext = ChaCha20Poly1305(self.k).encrypt(aead_nonce(self.n), plaintext, self.h)
            self.n += 1
        self.mix_hash(ciphertext)
        return ciphertext

    def decrypt_and_hash(self, ciphertext):
        if self.k is None:
            plaintext = ciphertext
        else:
            plaintext = ChaCha20Poly1305(self.k).decrypt(aead_nonce(self.n), ciphertext, self.h)
            self.n += 1
        self.mix_hash(ciphertext)
        return plaintext

    @staticmethod
    def public(private):
        return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def dh(self, token):
        if token == "ee":
            local, remote = self.e, self.re
        elif token == "es":
            local, remote = (self.e, self.rs) if self.initiator else (self.s, self.re)
        else:
            local, remote = (self.s, self.re) if self.initiator else (self.e, self.rs)
        self.mix_key(local.exchange(X25519PublicKey.from_public_bytes(remote)))

    def write(self, payload, ephemeral_private=None):
        message = b""
        for token in self.PATTERN[self.index]:
            if token == "e":
                self.e = X25519PrivateKey.from_private_bytes(ephemeral_private)
                message += self.public(self.e)
                self.mix_hash(self.public(self.e))
            elif token == "s":
                message += self.encrypt_and_hash(self.public(self.s))
            else:
                self.dh(token)
        self.index += 1
        return message + self.encrypt_and_hash(payload)

    def read(self, message):
        for token in self.PATTERN[self.index]:
            if token == "e":
                self.re, message = message[:32], message[32:]
                self.mix_hash(self.re)
            elif token == "s":
                size = 32 + (16 if self.k is not None else 0)
                self.rs = self.decrypt_and_hash(message[:size])
                message = message[size:]
            else:
                self.dh(token)
        self.index += 1
        return self.decrypt_and_hash(message)

    def split(self):
        first, second = self.hkdf(b"", 2)
        return first[:32], second[:32]


# --- Section 3.3: handshake parameters -------------------------------------------------------

def parse_parameters(payload):
    if len(payload) < 7:
        raise Drop("truncated")
    if len(payload) > 7:
        raise Drop("trailing-bytes")
    if payload[0] != 1:
        raise Drop("unsupported-version")
    window = int.from_bytes(payload[5:7], "big")
    if window == 0:
        raise Drop("malformed")
    return {"version": 1, "max_card_bytes": int.from_bytes(payload[1:5], "big"), "receive_window": window}


def encode_parameters(version, max_card_bytes, receive_window):
    return bytes([version]) + uint(max_card_bytes, 4) + uint(receive_window, 2)


# --- Section 3.4: cards ---------------------------------------------------------------------

TEXT_LIMITS = {"name": (40, 160), "owner": (40, 160), "keyword": (24, 96)}


def grapheme_count(text):
    """Extended grapheme clusters (UAX #29), for the rules the vectors exercise: combining and
    spacing marks and emoji modifiers extend the character before them, regional indicators pair,
    and Hangul jamo join. Control and format characters are refused before this matters."""
    count, previous, regional_run = 0, None, 0
    for character in text:
        point = ord(character)
        category = unicodedata.category(character)
        extends = category in ("Mn", "Me", "Mc") or 0x1F3FB <= point <= 0x1F3FF
        regional = 0x1F1E6 <= point <= 0x1F1FF
        jamo_joins = previous is not None and (
            (0x1100 <= previous <= 0x115F and (0x1100 <= point <= 0x11A7 or 0xAC00 <= point <= 0xD7A3))
            or ((0x1160 <= previous <= 0x11A7
                 or (0xAC00 <= previous <= 0xD7A3 and (previous - 0xAC00) % 28 != 0))
                and 0x1160 <= point <= 0x11FF)
            or ((0x11A8 <= previous <= 0x11FF or 0xAC00 <= previous <= 0xD7A3) and 0x11A8 <= point <= 0x11FF))
        if previous is not None and (extends or jamo_joins or (regional and regional_run % 2 == 1)):
            pass
        else:
            count += 1
        regional_run = regional_run + 1 if regional else 0
        previous = point
    return count


# PROTOCOL.md 3.4: besides Cc and Cf, the default-ignorable code points that are not Cf
# (Other_Default_Ignorable_Code_Point and Variation_Selector) and U+2800 BRAILLE PATTERN BLANK.
INVISIBLE_RANGES = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180D), (0x180F, 0x180F),
    (0x2065, 0x2065), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF),
)


def invisible(character):
    if unicodedata.category(character) in ("Cc", "Cf"):
        return True
    point = ord(character)
    return any(low <= point <= high for low, high in INVISIBLE_RANGES)


def card_text(reader, kind):
    characters, max_bytes = TEXT_LIMITS[kind]
    raw = reader.take(reader.int(1))
    if not 1 <= len(raw) <= max_bytes:
        raise Drop("card-invalid", f"{kind} of {len(raw)} bytes")
    try:
        text = raw.decode("utf-8")  # strict: overlong forms, surrogates and values above U+10FFFF fail
    except UnicodeDecodeError as error:
        raise Drop("card-invalid", f"{kind} is not UTF-8") from error
    if any(invisible(character) for character in text):
        raise Drop("card-invalid", f"{kind} has a control, format or invisible character")
    if grapheme_count(text) > characters:
        raise Drop("card-invalid", f"{kind} has too many characters")
    return text


def decode_card(data):
    reader = Reader(data)
    try:
        if reader.int(1) != 1:
            raise Drop("card-invalid", "version")
        card = {"name": card_text(reader, "name"), "age": reader.int(1), "sex": reader.int(1),
                "neutered": reader.int(1), "size": reader.int(1)}
        if card["age"] > 30 or card["sex"] > 1 or card["neutered"] > 1 or card["size"] > 2:
            raise Drop("card-invalid", "a value out of range")
        card["neutered"] = card["neutered"] == 1
        count = reader.int(1)
        if count > 5:
            raise Drop("card-invalid", f"{count} keywords")
        card["keywords"] = [card_text(reader, "keyword") for _ in range(count)]
        card["owner"] = card_text(reader, "owner")
        kind = reader.int(1)
        if kind > 2:
            raise Drop("card-invalid", f"photo kind {kind}")
        card["photo"] = None
        if kind:
            length = reader.int(4)
            if not 1 <= length <= 262_144:
                raise Drop("card-invalid", f"photo of {length} bytes")
            photo = reader.take(length)
            signature = b"\xff\xd8\xff" if kind == 1 else b"\x89PNG\r\n\x1a\n"
            if not photo.startswith(signature):
                raise Drop("card-invalid", "photo signature")
            card["photo"] = {"kind": kind, "data": photo.hex()}
        reader.end()
    except Drop as drop:
        if drop.code != "card-invalid":
            raise Drop("card-invalid", str(drop)) from drop
        raise
    return card


def encode_card(card):
    def text(value):
        raw = value.encode("utf-8")
        return bytes([len(raw)]) + raw

    out = bytes([1]) + text(card["name"])
    out += bytes([card["age"], card["sex"], 1 if card["neutered"] else 0, card["size"]])
    out += bytes([len(card["keywords"])])
    out += b"".join(text(keyword) for keyword in card["keywords"]) + text(card["owner"])
    photo = card["photo"]
    if photo is None:
        return out + b"\0"
    data = unhex(photo["data"])
    return out + bytes([photo["kind"]]) + uint(len(data), 4) + data


# --- The checks, one per file ---------------------------------------------------------------

def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def expect_drop(function, vector):
    expect(ERROR_CODES[vector["error"]] == vector["code"], "error name and number disagree")
    try:
        function()
    except Drop as drop:
        expect(drop.code == vector["error"], f"dropped as {drop.code}, expected {vector['error']}")
        return
    raise AssertionError(f"accepted, expected {vector['error']}")


def check_wire(data):
    for vector in data["vectors"]:
        def check(vector=vector):
            bytes_ = unhex(vector["bytes"])
            expect(parse_datagram(bytes_) == (vector["type"], vector["fields"]), "decoding")
            expect(encode_datagram(vector["type"], vector["fields"]) == bytes_, "encoding")
        yield vector["name"], check
    covered = {vector["type"] for vector in data["vectors"]}
    missing = set(PACKET_NUMBERS) - covered
    yield "every datagram type", lambda: expect(not missing, f"missing {missing}")


def check_frames(data):
    for vector in data["vectors"]:
        def check(vector=vector):
            bytes_ = unhex(vector["bytes"])
            expect(parse_frames(bytes_) == vector["frames"], "decoding")
            expect(encode_frames(vector["frames"]) == bytes_, "encoding")
        yield vector["name"], check
    covered = {frame["type"] for vector in data["vectors"] for frame in vector["frames"]}
    missing = set(FRAME_NUMBERS) - covered
    yield "every frame type", lambda: expect(not missing, f"missing {missing}")


def check_pose(data):
    for vector in data["valid"]:
        def check(vector=vector):
            pose, bytes_ = vector["pose"], unhex(vector["bytes"])
            expect(encode_pose(pose["x_cm"], pose["y_cm"], pose["heading_degrees"]) == bytes_, "encoding")
            decoded = decode_pose(bytes_)
            expect(decoded == vector["decoded"], "decoding")
            again = encode_pose_integers(decoded["x_mm"], decoded["y_mm"], decoded["heading_centidegrees"])
            expect(again == bytes_, "encoding the decoded pose")
        yield vector["name"], check
    for vector in data["invalid"]:
        pose = unhex(vector["bytes"])
        ranging = bytes([2, 0, 0, 0, 1]) + pose + bytes(16)
        yield vector["name"], lambda vector=vector, ranging=ranging: expect_drop(
            lambda: parse_frames(ranging), vector)


def check_handshake(data):
    prologue = b"ProfileDrop" + bytes([WIRE_VERSION]) + unhex(data["session_id"]) + unhex(data["initiator_id"])
    prologue += unhex(data["responder_id"])
    results = {}

    def run():
        expect(data["protocol_name"] == "Noise_XX_25519_ChaChaPoly_BLAKE2b", "protocol name")
        expect(prologue == unhex(data["prologue"]), "prologue")
        initiator = NoiseParty(True, prologue, unhex(data["initiator_static_private"]))
        responder = NoiseParty(False, prologue, unhex(data["responder_static_private"]))
        for party, field in ((initiator, "initiator_static_public"), (responder, "responder_static_public")):
            expect(NoiseParty.public(party.s).hex() == data[field], field)
        ephemerals = [data["initiator_ephemeral_private"], data["responder_ephemeral_private"], None]
        ids = (data["initiator_id"], data["responder_id"])
        for index, message in enumerate(data["messages"]):
            writer, reader = (initiator, responder) if index != 1 else (responder, initiator)
            payload = unhex(message["payload"])
            ephemeral = unhex(ephemerals[index]) if ephemerals[index] else None
            noise = writer.write(payload, ephemeral)
            expect(noise.hex() == message["noise_message"], f"Noise message {index + 1}")
            expect(reader.read(noise) == payload, f"payload {index + 1}")
            if index:
                parse_parameters(payload)
            sender, receiver = ids if index != 1 else ids[::-1]
            fields = {"session_id": data["session_id"], "sender_id": sender, "receiver_id": receiver}
            if index == 0:
                fields["cookie"] = ""
            fields["noise_message"] = noise.hex()
            kind = ["INVITE", "ACCEPT", "CONFIRM"][index]
            expect(message["datagram_type"] == kind, "datagram type")
            expect(encode_datagram(kind, fields) == unhex(message["datagram"]), f"{kind} datagram")
            expect(parse_datagram(unhex(message["datagram"])) == (kind, fields), f"{kind} decoding")
        expect(initiator.h == responder.h and initiator.h.hex() == data["handshake_hash"], "handshake hash")
        expect(initiator.split() == responder.split(), "split")
        forward, backward = initiator.split()
        expect(forward.hex() == data["initiator_to_responder_key"], "initiator-to-responder key")
        expect(backward.hex() == data["responder_to_initiator_key"], "responder-to-initiator key")
        results["keys"] = {"initiator": forward, "responder": backward}

    yield "the handshake", run

    def parties_after(count):
        """Both sides once the first `count` messages of the vector went between them."""
        initiator = NoiseParty(True, prologue, unhex(data["initiator_static_private"]))
        responder = NoiseParty(False, prologue, unhex(data["responder_static_private"]))
        ephemerals = [data["initiator_ephemeral_private"], data["responder_ephemeral_private"], None]
        for index, message in enumerate(data["messages"][:count]):
            writer, reader = (initiator, responder) if index != 1 else (responder, initiator)
            ephemeral = unhex(ephemerals[index]) if ephemerals[index] else None
            reader.read(writer.write(unhex(message["payload"]), ephemeral))
        return initiator, responder

    for vector in data["messages_invalid"]:
        def check(vector=vector):
            index = vector["message_index"]
            initiator, responder = parties_after(index)
            reader = initiator if index == 1 else responder

            def read():
                try:
                    reader.read(unhex(vector["noise_message"]))
                except InvalidTag as error:
                    raise Drop("handshake-failed") from error

            expect_drop(read, vector)
        yield vector["name"], check

    def keys():
        expect("keys" in results, "the handshake failed")
        return results["keys"]

    for vector in data["secure_packets"]:
        def check(vector=vector):
            key = keys()[vector["sender"]]
            plaintext = unhex(vector["plaintext"])
            expect(encode_frames(vector["frames"]) == plaintext, "frames encoding")
            number = int(vector["packet_number"], 16)
            header = b"PD" + bytes([WIRE_VERSION, 7]) + unhex(data["session_id"]) + uint(number, 8)
            header += uint(len(plaintext) + 16, 2)
            expect(header == unhex(vector["associated_data"]), "associated data")
            expect(aead_nonce(number) == unhex(vector["nonce"]), "nonce")
            sealed = header + ChaCha20Poly1305(key).encrypt(aead_nonce(number), plaintext, header)
            expect(sealed == unhex(vector["datagram"]), "sealed datagram")
            kind, fields = parse_datagram(sealed)
            opened = ChaCha20Poly1305(key).decrypt(aead_nonce(number), unhex(fields["ciphertext"]), header)
            expect(kind == "SECURE" and parse_frames(opened) == vector["frames"], "opening")
        yield vector["name"], check

    for vector in data["secure_invalid"]:
        def check(vector=vector):
            key = keys()[vector["sender"]]

            def receive():
                datagram = unhex(vector["datagram"])
                _, fields = parse_datagram(datagram)
                number = int(fields["packet_number"], 16)
                try:
                    plaintext = ChaCha20Poly1305(key).decrypt(
                        aead_nonce(number), unhex(fields["ciphertext"]), datagram[:22])
                except InvalidTag as error:
                    raise Drop("authentication-failed") from error
                if "plaintext" in vector:
                    expect(plaintext == unhex(vector["plaintext"]), "plaintext")
                parse_frames(plaintext)

            expect_drop(receive, vector)
        yield vector["name"], check

    def replay():
        window = data["replay_window"]
        expect(window["size"] == 128, "window size")
        largest, received = None, set()
        for arrival in window["arrivals"]:
            number = arrival["packet_number"]
            result = "accepted"
            if largest is not None and number <= largest and largest - number >= 128:
                result = "too-old"
            elif number in received:
                result = "replayed"
            else:
                received.add(number)
                largest = number if largest is None else max(largest, number)
            expect(result == arrival["result"], f"packet {number}: {result}")

    yield "the replay window", replay

    for vector in data["parameters"]["valid"]:
        def check(vector=vector):
            bytes_ = unhex(vector["bytes"])
            fields = {key: vector[key] for key in ("version", "max_card_bytes", "receive_window")}
            expect(parse_parameters(bytes_) == fields, "decoding")
            expect(encode_parameters(**fields) == bytes_, "encoding")
        yield f"parameters {vector['bytes']}", check
    for vector in data["parameters"]["invalid"]:
        yield f"parameters: {vector['name']}", lambda vector=vector: expect_drop(
            lambda: parse_parameters(unhex(vector["bytes"])), vector)


def check_recognition(data):
    for index, vector in enumerate(data["identities"]):
        def check(vector=vector):
            key = hmac_blake2b(unhex(vector["identity_secret"]), b"ProfileDrop v2 resolving key")[:32]
            expect(key.hex() == vector["resolving_key"], "resolving key")
            nonce = unhex(vector["ident_nonce"])
            ident = nonce + hmac_blake2b(key, b"ProfileDrop v2 ident" + nonce)[:16]
            expect(ident.hex() == vector["ident"], "IDENT")
        yield f"identity {index}", check
    for index, vector in enumerate(data["resolution"]):
        def check(vector=vector):
            ident = unhex(vector["ident"])
            match = None
            for position, key in enumerate(vector["known_resolving_keys"]):
                tag = hmac_blake2b(unhex(key), b"ProfileDrop v2 ident" + ident[:16])[:16]
                if hmac.compare_digest(tag, ident[16:]):
                    match = position
                    break
            expect(match == vector["match"], f"resolved to {match}")
        yield f"resolution {index}", check
    for index, vector in enumerate(data["bonds"]):
        def check(vector=vector):
            h = unhex(vector["handshake_hash"])
            shares = unhex(vector["initiator_share"]) + unhex(vector["responder_share"])
            bond = hmac_blake2b(shares, b"ProfileDrop v2 bond" + h)[:32]
            expect(bond.hex() == vector["bond_key"], "bond key")
            for role, r in (("initiator_proof", b"\0"), ("responder_proof", b"\1")):
                proof = hmac_blake2b(bond, b"ProfileDrop v2 proof" + r + h)[:32]
                expect(proof.hex() == vector[role], role)
        yield f"bond {index}", check


def check_verification(data):
    for vector in data["vectors"]:
        def check(vector=vector):
            h, responder_nonce = unhex(vector["handshake_hash"]), unhex(vector["responder_nonce"])
            commitment = blake2b_256(b"ProfileDrop v2 commit" + h + responder_nonce)
            expect(commitment.hex() == vector["commitment"], "COMMIT")
            initiator_nonce = unhex(vector["initiator_nonce"])
            digest = blake2b_512(b"ProfileDrop v2 code" + h + initiator_nonce + responder_nonce)
            code = f"{int.from_bytes(digest[:8], 'big') % 1_000_000:06d}"
            expect(code == vector["code"], f"code {code}")
            frames = [{"type": "COMMIT", "commitment": commitment.hex()},
                      {"type": "NONCE", "nonce": vector["initiator_nonce"]},
                      {"type": "REVEAL", "nonce": vector["responder_nonce"]}]
            expect(encode_frames(frames).hex() == vector["frames"], "COMMIT, NONCE and REVEAL frames")
        yield vector["name"], check


def check_cookie(data):
    def bucket_length():
        expect(data["bucket_length_ns"] == 7_750_000_000, "a bucket is 7.75 s")

    yield "bucket length", bucket_length
    for index, vector in enumerate(data["vectors"]):
        def check(vector=vector):
            bucket = vector["time_ns"] // data["bucket_length_ns"]
            expect(bucket == vector["bucket"], "bucket")
            address = bytes(int(octet) for octet in vector["source_ipv4"].split("."))
            message = b"ProfileDrop cookie" + uint(bucket, 8) + address + uint(vector["source_port"], 2)
            message += unhex(vector["session_id"]) + unhex(vector["sender_id"]) + unhex(vector["receiver_id"])
            expect(message.hex() == vector["hmac_message"], "HMAC message")
            cookie = hmac_blake2b(unhex(vector["secret"]), message)[:16]
            expect(cookie.hex() == vector["cookie"], "cookie")
            busy = {"session_id": vector["session_id"], "sender_id": vector["receiver_id"],
                    "receiver_id": vector["sender_id"], "reason": 3, "cookie": cookie.hex()}
            expect(encode_datagram("BUSY", busy) == unhex(vector["busy_retry_datagram"]), "BUSY(retry)")
            decoded = parse_datagram(unhex(vector["busy_retry_datagram"]))
            expect(decoded == ("BUSY", busy), "BUSY(retry) decoding")
        yield f"cookie {index}", check


def check_card(data):
    for vector in data["valid"]:
        def check(vector=vector):
            bytes_ = unhex(vector["bytes"])
            expect(encode_card(vector["card"]) == bytes_, "encoding")
            expect(decode_card(bytes_) == vector["card"], "decoding")
            expect(blake2b_256(bytes_).hex() == vector["digest"], "digest")
        yield vector["name"], check
    for vector in data["invalid"]:
        yield vector["name"], lambda vector=vector: expect_drop(
            lambda: decode_card(unhex(vector["bytes"])), vector)


def check_invalid(data):
    for vector in data["datagrams"]:
        yield vector["name"], lambda vector=vector: expect_drop(
            lambda: parse_datagram(unhex(vector["bytes"])), vector)
    for vector in data["frames"]:
        yield vector["name"], lambda vector=vector: expect_drop(
            lambda: parse_frames(unhex(vector["bytes"])), vector)


CHECKS = [("wire", check_wire), ("frames", check_frames), ("pose", check_pose),
          ("handshake", check_handshake), ("recognition", check_recognition),
          ("verification", check_verification), ("cookie", check_cookie), ("card", check_card),
          ("invalid", check_invalid)]


def main():
    passed = failed = 0
    expected = {f"{name}.json" for name, _ in CHECKS}
    present = {path.name for path in VECTORS.glob("*.json")}
    for extra in sorted(present - expected):
        print(f"{extra}: no check for this file")
        failed += 1
    for name, checker in CHECKS:
        path = VECTORS / f"{name}.json"
        if not path.exists():
            print(f"{path.name}: missing")
            failed += 1
            continue
        good = bad = 0
        for label, check in checker(json.loads(path.read_text(encoding="utf-8"))):
            try:
                check()
                good += 1
            except (AssertionError, Drop, KeyError, ValueError, InvalidTag) as error:
                bad += 1
                print(f"  FAIL {path.name}: {label}: {error}")
        print(f"{path.name}: {good} vectors match" + (f", {bad} do not" if bad else ""))
        passed, failed = passed + good, failed + bad
    print(f"vectors: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
