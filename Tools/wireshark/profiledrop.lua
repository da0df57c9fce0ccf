-- Wireshark dissector for ProfileDrop version 1 (see PROTOCOL.md, section 3).
--
-- Decodes the 4-byte header and every cleartext field of the seven datagram types. SECURE
-- payloads are shown as ciphertext: the frames inside are encrypted.
--
-- Use:  wireshark -X lua_script:Tools/wireshark/profiledrop.lua capture.pcapng
--       tshark -X lua_script:Tools/wireshark/profiledrop.lua -r capture.pcapng -Y profiledrop
-- or copy the file into the personal Lua plugins folder (Help > About > Folders).
--
-- The dissector registers on the discovery port 47544 and the simulator's port 47474, and as a
-- heuristic dissector on UDP for unicast exchanges on other ports (magic "PD", version 1, a
-- defined type).

local profiledrop = Proto("profiledrop", "ProfileDrop")

local MAGIC = 0x5044
local VERSION = 1
local PORTS = { 47544, 47474 }

local type_names = {
    [1] = "BEACON",
    [2] = "QUERY",
    [3] = "INVITE",
    [4] = "ACCEPT",
    [5] = "CONFIRM",
    [6] = "BUSY",
    [7] = "SECURE",
}

local busy_reasons = {
    [1] = "in session",
    [2] = "unavailable",
}

local f = {
    magic = ProtoField.uint16("profiledrop.magic", "Magic", base.HEX),
    version = ProtoField.uint8("profiledrop.version", "Version", base.DEC),
    type = ProtoField.uint8("profiledrop.type", "Type", base.DEC, type_names),
    type_name = ProtoField.string("profiledrop.type_name", "Type name"),
    device_id = ProtoField.uint64("profiledrop.device_id", "Device ID", base.HEX),
    port = ProtoField.uint16("profiledrop.port", "Unicast port", base.DEC),
    flags = ProtoField.uint8("profiledrop.flags", "Flags", base.HEX),
    busy_flag = ProtoField.bool("profiledrop.flags.busy", "Busy", 8, nil, 0x01),
    known_count = ProtoField.uint8("profiledrop.known_count", "Known-answer count", base.DEC),
    known_answer = ProtoField.uint64("profiledrop.known_answer", "Known answer", base.HEX),
    session_id = ProtoField.uint64("profiledrop.session_id", "Session ID", base.HEX),
    sender = ProtoField.uint64("profiledrop.sender", "Sender ID", base.HEX),
    receiver = ProtoField.uint64("profiledrop.receiver", "Receiver ID", base.HEX),
    noise_length = ProtoField.uint16("profiledrop.noise_length", "Noise message length", base.DEC),
    noise = ProtoField.bytes("profiledrop.noise", "Noise message"),
    noise_e = ProtoField.bytes("profiledrop.noise.e", "Ephemeral public key (e)"),
    reason = ProtoField.uint8("profiledrop.busy_reason", "Busy reason", base.DEC, busy_reasons),
    packet_number = ProtoField.uint64("profiledrop.packet_number", "Packet number", base.DEC),
    ciphertext_length = ProtoField.uint16("profiledrop.ciphertext_length", "Ciphertext length", base.DEC),
    ciphertext = ProtoField.bytes("profiledrop.ciphertext", "Ciphertext (frames and tag)"),
    tag = ProtoField.bytes("profiledrop.tag", "Poly1305 tag"),
}
profiledrop.fields = {
    f.magic, f.version, f.type, f.type_name, f.device_id, f.port, f.flags, f.busy_flag, f.known_count,
    f.known_answer, f.session_id, f.sender, f.receiver, f.noise_length, f.noise, f.noise_e, f.reason,
    f.packet_number, f.ciphertext_length, f.ciphertext, f.tag,
}

local e_truncated = ProtoExpert.new(
    "profiledrop.truncated", "Datagram ends inside a field", expert.group.MALFORMED, expert.severity.ERROR)
local e_trailing = ProtoExpert.new(
    "profiledrop.trailing", "Bytes after the last field", expert.group.MALFORMED, expert.severity.WARN)
local e_reserved = ProtoExpert.new(
    "profiledrop.reserved", "Reserved bits set or value undefined", expert.group.MALFORMED,
    expert.severity.WARN)
profiledrop.experts = { e_truncated, e_trailing, e_reserved }

-- Whether `buffer` starts like a ProfileDrop datagram.
local function looks_like_profiledrop(buffer)
    if buffer:len() < 4 then return false end
    if buffer(0, 2):uint() ~= MAGIC or buffer(2, 1):uint() ~= VERSION then return false end
    return type_names[buffer(3, 1):uint()] ~= nil
end

-- Sixteen lowercase hex digits, as the command line prints ids.
local function hex64(range)
    return range:bytes():tohex():lower()
end

function profiledrop.dissector(buffer, pinfo, tree)
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

    if type == 1 then
        local id = take(f.device_id, 8)
        local port = take(f.port, 2)
        if id and port then
            local flags_range = take(f.flags, 1)
            if flags_range then
                subtree:add(f.busy_flag, flags_range)
                if bit.band(flags_range:uint(), 0xFE) ~= 0 then subtree:add_proto_expert_info(e_reserved) end
                info = string.format("%s device=%s port=%d busy=%s", name, hex64(id), port:uint(),
                    tostring(bit.band(flags_range:uint(), 1) == 1))
            end
        end
    elseif type == 2 then
        local id = take(f.device_id, 8)
        local count = id and take(f.known_count, 1)
        if count then
            for _ = 1, count:uint() do
                if not take(f.known_answer, 8) then break end
            end
            info = string.format("%s device=%s known=%d", name, hex64(id), count:uint())
        end
    elseif type >= 3 and type <= 5 then
        local session = take(f.session_id, 8)
        local sender = session and take(f.sender, 8)
        local receiver = sender and take(f.receiver, 8)
        local noise_length = receiver and take(f.noise_length, 2)
        if noise_length then
            local count = noise_length:uint()
            if offset + count > length then
                subtree:add_proto_expert_info(e_truncated, "Noise message shorter than its length")
            else
                subtree:add(f.noise, buffer(offset, count))
                -- Messages 1 and 2 of Noise XX start with the sender's ephemeral key in the clear.
                if (type == 3 or type == 4) and count >= 32 then subtree:add(f.noise_e, buffer(offset, 32)) end
                offset = offset + count
            end
            info = string.format("%s session=%s %s -> %s noise=%dB", name, hex64(session), hex64(sender),
                hex64(receiver), count)
        end
    elseif type == 6 then
        local session = take(f.session_id, 8)
        local sender = session and take(f.sender, 8)
        local receiver = sender and take(f.receiver, 8)
        local reason = receiver and take(f.reason, 1)
        if reason then
            if busy_reasons[reason:uint()] == nil then subtree:add_proto_expert_info(e_reserved) end
            info = string.format("%s session=%s reason=%s", name, hex64(session),
                busy_reasons[reason:uint()] or tostring(reason:uint()))
        end
    elseif type == 7 then
        local session = take(f.session_id, 8)
        local number = session and take(f.packet_number, 8)
        local ciphertext_length = number and take(f.ciphertext_length, 2)
        if ciphertext_length then
            local count = ciphertext_length:uint()
            if offset + count > length then
                subtree:add_proto_expert_info(e_truncated, "Ciphertext shorter than its length")
            else
                local ciphertext = subtree:add(f.ciphertext, buffer(offset, count))
                if count >= 16 then ciphertext:add(f.tag, buffer(offset + count - 16, 16)) end
                offset = offset + count
            end
            info = string.format("%s session=%s pn=%s len=%d", name, hex64(session),
                tostring(number:uint64()), count)
        end
    end
    if offset < length then
        subtree:add_proto_expert_info(e_trailing, string.format("%d bytes after the last field", length - offset))
    end
    pinfo.cols.info = info
    return length
end

local function heuristic(buffer, pinfo, tree)
    if not looks_like_profiledrop(buffer) then return false end
    profiledrop.dissector(buffer, pinfo, tree)
    return true
end

local udp_port = DissectorTable.get("udp.port")
for _, port in ipairs(PORTS) do udp_port:add(port, profiledrop) end
profiledrop:register_heuristic("udp", heuristic)
