#!/usr/bin/env python3
"""A Noise_XX_25519_ChaChaPoly_BLAKE2b peer built on the third-party `noiseprotocol` package.

The Swift interop tests start it and talk to it over stdin/stdout. Every Noise message travels as a
frame: a 2-byte big-endian length, then the bytes. Status goes to stderr as one JSON object a line.

Script: the XX handshake (payloads b"hs1", b"hs2", b"hs3"), then TRANSPORT rounds in which the
initiator sends b"i->r <n>" and the responder answers b"r->i <n>". Each side checks what it reads.

Exit codes: 0 all good; 3 a message failed authentication; 4 a payload was not the expected one;
5 the stream ended early.
"""
import argparse
import json
import struct
import sys

from noise.connection import Keypair, NoiseConnection
from noise.exceptions import NoiseInvalidMessage
from cryptography.exceptions import InvalidTag

PROTOCOL = b"Noise_XX_25519_ChaChaPoly_BLAKE2b"


def status(**fields):
    sys.stderr.write(json.dumps(fields) + "\n")
    sys.stderr.flush()


def read_frame():
    header = sys.stdin.buffer.read(2)
    if len(header) < 2:
        status(event="error", reason="eof")
        sys.exit(5)
    (length,) = struct.unpack(">H", header)
    body = sys.stdin.buffer.read(length)
    if len(body) < length:
        status(event="error", reason="eof")
        sys.exit(5)
    return body


def write_frame(data, index, tamper):
    if tamper is not None and tamper == index:
        data = bytearray(data)
        data[len(data) // 2] ^= 0x01
        data = bytes(data)
    sys.stdout.buffer.write(struct.pack(">H", len(data)) + data)
    sys.stdout.buffer.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["initiator", "responder"], required=True)
    parser.add_argument("--static-private", required=True, help="hex")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tamper-outgoing", type=int, default=None,
                        help="flip a bit in this outgoing message (0-based, handshake messages first)")
    args = parser.parse_args()

    connection = NoiseConnection.from_name(PROTOCOL)
    initiator = args.role == "initiator"
    if initiator:
        connection.set_as_initiator()
    else:
        connection.set_as_responder()
    connection.set_keypair_from_private_bytes(Keypair.STATIC, bytes.fromhex(args.static_private))
    connection.start_handshake()

    sent = 0

    def send(data):
        nonlocal sent
        write_frame(data, sent, args.tamper_outgoing)
        sent += 1

    def expect(received, wanted):
        if received != wanted:
            status(event="error", reason="payload", got=received.hex(), wanted=wanted.hex())
            sys.exit(4)

    try:
        handshake_payloads = [b"hs1", b"hs2", b"hs3"]
        for index, payload in enumerate(handshake_payloads):
            ours = (index % 2 == 0) == initiator
            if ours:
                send(connection.write_message(payload))
            else:
                expect(connection.read_message(read_frame()), payload)
        if not connection.handshake_finished:
            status(event="error", reason="handshake not finished")
            sys.exit(4)
        status(event="handshake", hash=connection.get_handshake_hash().hex())

        for round_number in range(args.rounds):
            request = b"i->r %d" % round_number
            reply = b"r->i %d" % round_number
            if initiator:
                send(connection.encrypt(request))
                expect(connection.decrypt(read_frame()), reply)
            else:
                expect(connection.decrypt(read_frame()), request)
                send(connection.encrypt(reply))
    except (NoiseInvalidMessage, InvalidTag) as error:
        status(event="error", reason="authentication", detail=type(error).__name__)
        sys.exit(3)
    status(event="done", rounds=args.rounds)


if __name__ == "__main__":
    main()
