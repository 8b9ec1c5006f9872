//! Hash slots: which of the 16384 slots a key belongs to, exactly as
//! Redis Cluster computes it (`keyHashSlot` in `cluster.c`): CRC16 (XMODEM)
//! of the key, or of its hash tag, modulo 16384. A hash tag is the part
//! between the first `{` and the first `}` after it, when that part is not
//! empty; it lets a client keep related keys in one slot (`{user42}:a`,
//! `{user42}:b`).

/// Hash slots of a cluster.
pub const SLOTS: usize = 16384;

/// CRC16 with polynomial 0x1021 and initial value 0 (XMODEM), Redis's
/// `crc16`, one table lookup per byte.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = (byte as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
};

/// CRC16 (XMODEM) of `bytes`.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[(((crc >> 8) as u8) ^ b) as usize]
    })
}

/// The part of `key` that is hashed: its hash tag if it has a non-empty
/// one, else all of it.
pub fn hashed_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

/// The hash slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) & (SLOTS as u16 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_reference_check_value() {
        // The XMODEM check value, and Redis's own test vector.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn slots_match_redis() {
        // CLUSTER KEYSLOT on redis-server 7.0.15.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"somekey"), 11058);
        assert_eq!(key_slot(b""), 0);
    }

    #[test]
    fn hash_tags_follow_redis_rules() {
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(hashed_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hashed_part(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hashed_part(b"{"), b"{");
        assert_eq!(hashed_part(b"a}b{c"), b"a}b{c");
    }
}
