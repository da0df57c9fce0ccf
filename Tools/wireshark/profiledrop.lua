-- Wireshark dissector for ProfileDrop protocol 2.1, wire version 3 (see PROTOCOL.md, section 3).
--
-- Decodes the 4-byte header and every cleartext field of the nine datagram types. SECURE
-- payloads are shown as ciphertext: the frames inside (IDENT, PROOF, COMMIT, NONCE, REVEAL and
-- BOND among them) are encrypted; `profiledrop replay` shows them decrypted. Datagrams of another
-- version (1, or 2 before return routability) are shown as "version N (not spoken)", header only.
--
-- Use:  wireshark -X lua_script:Tools/wireshark/profiledrop.lua capture.pcapng
--       tshark -X lua_script:Tools/wireshark/profiledrop.lua -r capture.pcapng -Y profiledrop
-- or copy the file into the personal Lua plugins folder (Help > About > Folders).
--
-- A post-dissector also labels the replay records that captures carry in pcapng Custom Blocks.
--
-- The dissector registers on the discovery port 47544 and the simulator's port 47474, and as a
-- heuristic dissector on UDP for unicast exchanges on other ports (magic "PD", version 3, 2 or 1,
-- a defined type).

local profiledrop = Proto("profiledrop", "ProfileDrop")

local MAGIC = 0x5044
local VERSION = 3
-- Versions the heuristic claims: ours, and versions 1 and 2, shown as not spoken.
local KNOWN_VERSIONS = { [1] = true, [2] = true, [3] = true }
local PORTS = { 47544, 47474 }

local type_names = {
    [1] = "BEACON",
    [2] = "QUERY",
    [3] = "INVITE",
    [4] = "ACCEPT",
    [5] = "CONFIRM",
    [6] = "BUSY",
    [7] = "SECURE",
    [8] = "PROBE",
    [9] = "PROBE_ACK",
}

local busy_reasons = {
    [1] = "in session",
    [2] = "unavailable",
    [3] = "retry",
    [4] = "stale id",
}

-- INVITE is padded with zero bytes to at least this length (PROTOCOL.md section 3).
local INVITE_MINIMUM = 144
-- QUERY is padded with zero bytes to at least this length (PROTOCOL.md section 3).
local QUERY_MINIMUM = 28

local f = {
    magic = ProtoField.uint16("profiledrop.magic", "Magic", base.HEX),
    version = ProtoField.uint8("profiledrop.version", "Version", base.DEC),
    type = ProtoField.uint8("profiledrop.type", "Type", base.DEC, type_names),
    type_name = ProtoField.string("profiledrop.type_name", "Type name"),
    device_id = ProtoField.uint64("profiledrop.device_id", "Device ID", base.HEX),
    port = ProtoField.uint16("profiledrop.port", "Unicast port", base.DEC),
    flags = ProtoField.uint8("profiledrop.flags", "Flags", base.HEX),
    busy_flag = ProtoField.bool("profiledrop.flags.busy", "Busy", 8, nil, 0x01),
    position_flag = ProtoField.bool("profiledrop.flags.position", "Position hint follows", 8, nil, 0x02),
    query_position_flag = ProtoField.bool("profiledrop.query_flags.position", "Position hint follows", 8, nil,
        0x01),
    position_x = ProtoField.int32("profiledrop.position_x", "Position x (cm)", base.DEC),
    position_y = ProtoField.int32("profiledrop.position_y", "Position y (cm)", base.DEC),
    beacon_sequence = ProtoField.uint32("profiledrop.beacon_sequence", "Beacon sequence", base.DEC),
    known_count = ProtoField.uint8("profiledrop.known_count", "Known-answer count", base.DEC),
    known_answer = ProtoField.uint64("profiledrop.known_answer", "Known answer", base.HEX),
    session_id = ProtoField.uint64("profiledrop.session_id", "Session ID", base.HEX),
    sender = ProtoField.uint64("profiledrop.sender", "Sender ID", base.HEX),
    receiver = ProtoField.uint64("profiledrop.receiver", "Receiver ID", base.HEX),
    noise_length = ProtoField.uint16("profiledrop.noise_length", "Noise message length", base.DEC),
    noise = ProtoField.bytes("profiledrop.noise", "Noise message"),
    noise_e = ProtoField.bytes("profiledrop.noise.e", "Ephemeral public key (e)"),
    reason = ProtoField.uint8("profiledrop.busy_reason", "Busy reason", base.DEC, busy_reasons),
    cookie = ProtoField.bytes("profiledrop.cookie", "Cookie"),
    padding = ProtoField.bytes("profiledrop.padding", "Padding"),
    packet_number = ProtoField.uint64("profiledrop.packet_number", "Packet number", base.DEC),
    ciphertext_length = ProtoField.uint16("profiledrop.ciphertext_length", "Ciphertext length", base.DEC),
    ciphertext = ProtoField.bytes("profiledrop.ciphertext", "Ciphertext (frames and tag)"),
    tag = ProtoField.bytes("profiledrop.tag", "Poly1305 tag"),
    challenge = ProtoField.uint64("profiledrop.challenge", "Challenge", base.HEX),
}
profiledrop.fields = {
    f.magic, f.version, f.type, f.type_name, f.device_id, f.port, f.flags, f.busy_flag, f.position_flag,
    f.query_position_flag, f.position_x, f.position_y, f.beacon_sequence, f.known_count,
    f.known_answer, f.session_id, f.sender, f.receiver, f.noise_length, f.noise, f.noise_e, f.reason,
    f.cookie, f.padding, f.packet_number, f.ciphertext_length, f.ciphertext, f.tag, f.challenge,
}

local e_truncated = ProtoExpert.new(
    "profiledrop.truncated", "Datagram ends inside a field", expert.group.MALFORMED, expert.severity.ERROR)
local e_trailing = ProtoExpert.new(
    "profiledrop.trailing", "Bytes after the last field", expert.group.MALFORMED, expert.severity.WARN)
local e_reserved = ProtoExpert.new(
    "profiledrop.reserved", "Reserved bits set or value undefined", expert.group.MALFORMED,
    expert.severity.WARN)
local e_version = ProtoExpert.new(
    "profiledrop.version_not_spoken", "Another protocol version: wire version 3 devices ignore it",
    expert.group.PROTOCOL, expert.severity.NOTE)
profiledrop.experts = { e_truncated, e_trailing, e_reserved, e_version }

-- Whether `buffer` starts like a ProfileDrop datagram (of any version).
local function has_magic(buffer)
    return buffer:len() >= 4 and buffer(0, 2):uint() == MAGIC
end

-- Whether `buffer` starts like a ProfileDrop datagram of a version we know and a defined type.
local function looks_like_profiledrop(buffer)
    if not has_magic(buffer) or not KNOWN_VERSIONS[buffer(2, 1):uint()] then return false end
    return type_names[buffer(3, 1):uint()] ~= nil
end

-- Sixteen lowercase hex digits, as the command line prints ids.
local function hex64(range)
    return range:bytes():tohex():lower()
end

-- A datagram of another version: its header, and the rest as bytes we do not read.
local function dissect_other_version(buffer, pinfo, tree)
    local version = buffer(2, 1):uint()
    local text = string.format("version %d (not spoken)", version)
    pinfo.cols.protocol = "ProfileDrop"
    local subtree = tree:add(profiledrop, buffer(), "ProfileDrop " .. text)
    subtree:add(f.magic, buffer(0, 2))
    subtree:add(f.version, buffer(2, 1)):append_text(" (not spoken)")
    subtree:add(f.type, buffer(3, 1))
    subtree:add_proto_expert_info(e_version, text)
    pinfo.cols.info = text
    return buffer:len()
end

function profiledrop.dissector(buffer, pinfo, tree)
    if not has_magic(buffer) then return 0 end
    if buffer(2, 1):uint() ~= VERSION then return dissect_other_version(buffer, pinfo, tree) end
    if not looks_like_profiledrop(buffer) then return 0 end
    local length = buffer:len()
    local type = buffer(3, 1):uint()
    local name = type_names[type]
    pinfo.cols.protocol = "ProfileDrop"
    local subtree = tree:add(profiledrop, buffer(), "ProfileDrop " .. name)
    subtree:add(f.magic, buffer(0, 2))
    subtree:add(f.version, buffer(2, 1))
    subtree:add(f.type, buffer(3, 1))
    subtree:add(f.type_name, buffer(3, 1), name)
    local info = name
    local offset = 4

    -- Adds `size` bytes at the current offset as `field`; false when the datagram is too short.
    local function take(field, size)
        if offset + size > length then
            subtree:add_proto_expert_info(e_truncated, string.format("%s needs %d bytes", field.name, size))
            return nil
        end
        local range = buffer(offset, size)
        subtree:add(field, range)
        offset = offset + size
        return range
    end

    -- The `count` bytes a length field announced, added as `field` (whose tree item is returned
    -- with the range), or a note that the datagram ends first.
    local function take_announced(field, count, what)
        if offset + count > length then
            subtree:add_proto_expert_info(e_truncated, what .. " shorter than its length")
            return nil
        end
        local range = buffer(offset, count)
        local item = subtree:add(field, range)
        offset = offset + count
        return range, item
    end

    -- Zero bytes up to `minimum`, the datagram's padded length (INVITE, QUERY); flagged unless zero.
    local function take_padding(minimum)
        local padding = minimum - offset
        if padding <= 0 then return end
        local range = take(f.padding, padding)
        if not range then return end
        for index = 0, padding - 1 do
            if range(index, 1):uint() ~= 0 then
                subtree:add_proto_expert_info(e_reserved, "Padding is not zero")
                return
            end
        end
    end

    if type == 1 then
        local id = take(f.device_id, 8)
        local port = take(f.port, 2)
        if id and port then
            local flags_range = take(f.flags, 1)
            if flags_range then
                subtree:add(f.busy_flag, flags_range)
                subtree:add(f.position_flag, flags_range)
                if bit.band(flags_range:uint(), 0xFC) ~= 0 then subtree:add_proto_expert_info(e_reserved) end
                local sequence = take(f.beacon_sequence, 4)
                if sequence then
                    info = string.format("%s device=%s port=%d busy=%s seq=%d", name, hex64(id), port:uint(),
                        tostring(bit.band(flags_range:uint(), 1) == 1), sequence:uint())
                    if bit.band(flags_range:uint(), 2) == 2 then
                        local x = take(f.position_x, 4)
                        local y = x and take(f.position_y, 4)
                        if y then info = info .. string.format(" at=(%d,%d)cm", x:int(), y:int()) end
                    end
                end
            end
        end
    elseif type == 2 then
        local id = take(f.device_id, 8)
        local flags_range = id and take(f.flags, 1)
        local at = ""
        if flags_range then
            subtree:add(f.query_position_flag, flags_range)
            if bit.band(flags_range:uint(), 0xFE) ~= 0 then subtree:add_proto_expert_info(e_reserved) end
            if bit.band(flags_range:uint(), 1) == 1 then
                local x = take(f.position_x, 4)
                local y = x and take(f.position_y, 4)
                if y then at = string.format(" at=(%d,%d)cm", x:int(), y:int()) else flags_range = nil end
            end
        end
        local count = flags_range and take(f.known_count, 1)
        if count then
            local complete = true
            for _ = 1, count:uint() do
                if not take(f.known_answer, 8) then
                    complete = false
                    break
                end
            end
            info = string.format("%s device=%s known=%d%s", name, hex64(id), count:uint(), at)
            if complete then take_padding(QUERY_MINIMUM) end
        end
    elseif type >= 3 and type <= 5 then
        local session = take(f.session_id, 8)
        local sender = session and take(f.sender, 8)
        local receiver = sender and take(f.receiver, 8)
        -- INVITE only: the cookie of the invitee's BUSY(retry), sixteen zero bytes for none.
        local cookie = receiver
        local has_cookie = false
        if receiver and type == 3 then
            cookie = take(f.cookie, 16)
            if cookie then
                for index = 0, 15 do
                    if cookie(index, 1):uint() ~= 0 then has_cookie = true end
                end
            end
        end
        local noise_length = cookie and take(f.noise_length, 2)
        if noise_length then
            local count = noise_length:uint()
            local noise = take_announced(f.noise, count, "Noise message")
            -- Messages 1 and 2 of Noise XX start with the sender's ephemeral key in the clear.
            if noise and (type == 3 or type == 4) and count >= 32 then
                subtree:add(f.noise_e, noise:range(0, 32))
            end
            info = string.format("%s session=%s %s -> %s noise=%dB", name, hex64(session), hex64(sender),
                hex64(receiver), count)
            if type == 3 then
                if has_cookie then info = info .. " cookie" end
                if noise then take_padding(INVITE_MINIMUM) end
            end
        end
    elseif type == 6 then
        local session = take(f.session_id, 8)
        local sender = session and take(f.sender, 8)
        local receiver = sender and take(f.receiver, 8)
        local reason = receiver and take(f.reason, 1)
        if reason then
            if busy_reasons[reason:uint()] == nil then subtree:add_proto_expert_info(e_reserved) end
            -- Reason 3 (retry) carries the cookie to echo in the INVITE.
            if reason:uint() == 3 then take(f.cookie, 16) end
            info = string.format("%s session=%s reason=%s", name, hex64(session),
                busy_reasons[reason:uint()] or tostring(reason:uint()))
        end
    elseif type == 7 then
        local session = take(f.session_id, 8)
        local number = session and take(f.packet_number, 8)
        local ciphertext_length = number and take(f.ciphertext_length, 2)
        if ciphertext_length then
            local count = ciphertext_length:uint()
            local ciphertext, item = take_announced(f.ciphertext, count, "Ciphertext")
            if ciphertext and count >= 16 then item:add(f.tag, ciphertext:range(count - 16, 16)) end
            info = string.format("%s session=%s pn=%s len=%d", name, hex64(session),
                tostring(number:uint64()), count)
        end
    elseif type == 8 or type == 9 then
        local challenge = take(f.challenge, 8)
        if challenge then info = string.format("%s challenge=%s", name, hex64(challenge)) end
    end
    if offset < length then
        local extra = length - offset
        subtree:add_proto_expert_info(e_trailing, string.format("%d bytes after the last field", extra))
    end
    pinfo.cols.info = info
    return length
end

local function heuristic(buffer, pinfo, tree)
    if not looks_like_profiledrop(buffer) then return false end
    profiledrop.dissector(buffer, pinfo, tree)
    return true
end

-- Replay records: pcapng Custom Blocks under Private Enterprise Number 32473 (Captures/FORMAT.md).
-- Wireshark shows each such block as a frame whose data is the record; a post-dissector labels it.

local records = Proto("profiledrop_record", "ProfileDrop replay record")
local ENTERPRISE = 32473
local RECORD_VERSION = 4
local record_kinds = { [1] = "DEVICE", [2] = "INPUT", [3] = "END" }
local input_kinds = {
    [1] = "timeout", [2] = "pose", [3] = "decision", [4] = "datagram", [5] = "cancel", [6] = "decision about",
}
local consent_policies = {
    [1] = "share", [2] = "receive-only", [3] = "decline", [4] = "ask user", [5] = "share with known peers",
}
local decisions = { [1] = "share", [2] = "receive-only", [3] = "decline" }
local r = {
    length = ProtoField.uint32("profiledrop_record.length", "Record length", base.DEC),
    version = ProtoField.uint16("profiledrop_record.version", "Format version", base.DEC),
    kind = ProtoField.uint8("profiledrop_record.kind", "Kind", base.DEC, record_kinds),
    interface = ProtoField.uint32("profiledrop_record.interface", "Interface", base.DEC),
    name = ProtoField.string("profiledrop_record.name", "Device name"),
    device_id = ProtoField.uint64("profiledrop_record.device_id", "Device ID", base.HEX),
    address = ProtoField.ipv4("profiledrop_record.address", "Local address"),
    port = ProtoField.uint16("profiledrop_record.port", "Local port", base.DEC),
    static_key = ProtoField.bytes("profiledrop_record.static_public_key", "Static public key"),
    consent = ProtoField.uint8("profiledrop_record.consent", "Consent policy", base.DEC, consent_policies),
    has_card = ProtoField.uint8("profiledrop_record.has_card", "Offers a card", base.DEC),
    start = ProtoField.uint64("profiledrop_record.start_ns", "Start time (ns)", base.DEC),
    sequence = ProtoField.uint64("profiledrop_record.sequence", "Input sequence", base.DEC),
    time = ProtoField.uint64("profiledrop_record.time_ns", "Input time (ns)", base.DEC),
    random = ProtoField.uint32("profiledrop_record.random_bytes", "Random bytes drawn", base.DEC),
    input = ProtoField.uint8("profiledrop_record.input", "Input", base.DEC, input_kinds),
    decision = ProtoField.uint8("profiledrop_record.decision", "Decision", base.DEC, decisions),
    source = ProtoField.ipv4("profiledrop_record.source", "Datagram source"),
    source_port = ProtoField.uint16("profiledrop_record.source_port", "Datagram source port", base.DEC),
    datagram = ProtoField.bytes("profiledrop_record.datagram", "Datagram"),
    inputs = ProtoField.uint64("profiledrop_record.inputs", "Inputs recorded", base.DEC),
    outbound = ProtoField.uint64("profiledrop_record.outbound", "Datagrams sent", base.DEC),
}
records.fields = {
    r.length, r.version, r.kind, r.interface, r.name, r.device_id, r.address, r.port, r.static_key,
    r.consent, r.has_card, r.start, r.sequence, r.time, r.random, r.input, r.decision, r.source,
    r.source_port, r.datagram, r.inputs, r.outbound,
}
local cb_pen = Field.new("frame.cb_pen")

-- A big-endian IEEE 754 double (Lua 5.2 has no string.unpack).
local function double_be(range)
    local bytes = {}
    for index = 0, 7 do bytes[index + 1] = range(index, 1):uint() end
    local sign = bytes[1] >= 128 and -1 or 1
    local exponent = (bytes[1] % 128) * 16 + math.floor(bytes[2] / 16)
    local mantissa = bytes[2] % 16
    for index = 3, 8 do mantissa = mantissa * 256 + bytes[index] end
    if exponent == 0 then return sign * mantissa * 2 ^ -1074 end
    if exponent == 2047 then return mantissa == 0 and sign * math.huge or 0 / 0 end
    return sign * (mantissa + 2 ^ 52) * 2 ^ (exponent - 1075)
end

local function pose_text(buffer, offset)
    return string.format("x=%.1f y=%.1f heading=%.1f", double_be(buffer(offset, 8)),
        double_be(buffer(offset + 8, 8)), double_be(buffer(offset + 16, 8)))
end

function records.dissector(buffer, pinfo, tree)
    local pen = cb_pen()
    if pen == nil or pen.value ~= ENTERPRISE or buffer:len() < 7 then return end
    local length = buffer(0, 4):uint()
    if length + 4 > buffer:len() then return end
    local subtree = tree:add(records, buffer(0, length + 4), "ProfileDrop replay record")
    subtree:add(r.length, buffer(0, 4))
    subtree:add(r.version, buffer(4, 2))
    subtree:add(r.kind, buffer(6, 1))
    pinfo.cols.protocol = "ProfileDrop record"
    local version = buffer(4, 2):uint()
    local kind = buffer(6, 1):uint()
    if version ~= RECORD_VERSION then
        pinfo.cols.info = string.format("record of format version %d%s", version,
            version < RECORD_VERSION and " (an earlier build)" or "")
        return
    end
    local ok = pcall(function()
        if kind == 1 then
            subtree:add(r.interface, buffer(7, 4))
            local name_length = buffer(11, 1):uint()
            subtree:add(r.name, buffer(12, name_length))
            local offset = 12 + name_length
            subtree:add(r.device_id, buffer(offset, 8))
            subtree:add(r.address, buffer(offset + 8, 4))
            subtree:add(r.port, buffer(offset + 12, 2))
            subtree:add(r.static_key, buffer(offset + 14, 32))
            subtree:add(r.consent, buffer(offset + 46, 1))
            subtree:add(r.has_card, buffer(offset + 47, 1))
            subtree:add(r.start, buffer(offset + 48, 8))
            pinfo.cols.info = string.format("DEVICE %s id=%s", buffer(12, name_length):string(),
                buffer(offset, 8):bytes():tohex():lower())
        elseif kind == 2 then
            subtree:add(r.interface, buffer(7, 4))
            subtree:add(r.sequence, buffer(11, 8))
            subtree:add(r.time, buffer(19, 8))
            subtree:add(r.random, buffer(27, 4))
            subtree:add(r.input, buffer(31, 1))
            local input = buffer(31, 1):uint()
            local detail = ""
            if input == 2 then
                detail = " " .. pose_text(buffer, 32)
            elseif input == 3 then
                subtree:add(r.decision, buffer(32, 1))
                detail = " " .. (decisions[buffer(32, 1):uint()] or "?")
            elseif input == 6 then
                -- A decision about one candidate: the decision, then the candidate's device id.
                subtree:add(r.decision, buffer(32, 1))
                detail = string.format(" %s %s", decisions[buffer(32, 1):uint()] or "?",
                    buffer(33, 8):bytes():tohex():lower())
            elseif input == 4 then
                subtree:add(r.source, buffer(32, 4))
                subtree:add(r.source_port, buffer(36, 2))
                local count = buffer(38, 2):uint()
                subtree:add(r.datagram, buffer(40, count))
                detail = string.format(" %d bytes from %s", count, tostring(buffer(32, 4):ipv4()))
            end
            pinfo.cols.info = string.format("INPUT #%s interface %d %s%s", tostring(buffer(11, 8):uint64()),
                buffer(7, 4):uint(), input_kinds[input] or "?", detail)
        elseif kind == 3 then
            subtree:add(r.interface, buffer(7, 4))
            subtree:add(r.inputs, buffer(11, 8))
            subtree:add(r.outbound, buffer(19, 8))
            pinfo.cols.info = string.format("END interface %d: %s inputs, %s datagrams sent",
                buffer(7, 4):uint(), tostring(buffer(11, 8):uint64()), tostring(buffer(19, 8):uint64()))
        end
    end)
    if not ok then subtree:add_proto_expert_info(e_truncated, "record ends inside a field") end
end

register_postdissector(records)

local udp_port = DissectorTable.get("udp.port")
for _, port in ipairs(PORTS) do udp_port:add(port, profiledrop) end
profiledrop:register_heuristic("udp", heuristic)
