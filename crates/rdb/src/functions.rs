//! The FUNCTION DUMP payload, as Redis 7.0 makes it: every library as the
//! opcode `RDB_OPCODE_FUNCTION2` (245) followed by its code as an RDB
//! string, then the DUMP footer (RDB version and CRC-64). The libraries'
//! code is all there is: loading it again registers their functions.

use crate::object::{read_string_within, write_string, Refused};
use crate::payload::{checked_body, seal, PayloadError};

/// A library, in an RDB file or a FUNCTION DUMP payload.
const OPCODE_FUNCTION2: u8 = 245;
/// A library in the format of Redis 7.0's release candidates.
const OPCODE_FUNCTION_PRE_GA: u8 = 246;

/// Why a FUNCTION RESTORE payload is refused, with Redis's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionsError {
    VersionOrChecksum,
    NotAFunction,
    PreGa,
    BadLibrary,
    OverBudget,
}

impl FunctionsError {
    /// Redis's error reply for it.
    pub fn message(self) -> &'static str {
        match self {
            FunctionsError::VersionOrChecksum => "ERR DUMP payload version or checksum are wrong",
            FunctionsError::NotAFunction => "ERR given type is not a function",
            FunctionsError::PreGa => "ERR Pre-GA function format not supported",
            FunctionsError::BadLibrary => "ERR Failed loading library payload",
            FunctionsError::OverBudget => "ERR the payload's libraries do not fit in memory",
        }
    }
}

/// The FUNCTION DUMP payload of libraries with `codes`.
pub fn dump_functions<C: AsRef<[u8]>>(codes: &[C]) -> Vec<u8> {
    let mut body = Vec::new();
    for code in codes {
        body.push(OPCODE_FUNCTION2);
        write_string(code.as_ref(), &mut body);
    }
    seal(body)
}

/// The libraries' code in a FUNCTION RESTORE payload, its footer checked
/// first, allocating at most about `budget` bytes.
pub fn restore_functions(payload: &[u8], budget: usize) -> Result<Vec<Vec<u8>>, FunctionsError> {
    let mut body = checked_body(payload).map_err(|e| match e {
        PayloadError::VersionOrChecksum => FunctionsError::VersionOrChecksum,
        _ => FunctionsError::BadLibrary,
    })?;
    let mut codes = Vec::new();
    let mut left = budget;
    while let Some((&opcode, rest)) = body.split_first() {
        match opcode {
            OPCODE_FUNCTION2 => {}
            OPCODE_FUNCTION_PRE_GA => return Err(FunctionsError::PreGa),
            _ => return Err(FunctionsError::NotAFunction),
        }
        let (code, used) = read_string_within(rest, left).map_err(|e| match e {
            Refused::OverBudget => FunctionsError::OverBudget,
            Refused::Malformed | Refused::Truncated | Refused::Empty => FunctionsError::BadLibrary,
        })?;
        left -= code.len().min(left);
        codes.push(code);
        body = &rest[used..];
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_match_redis() {
        // FUNCTION DUMP of redis-server 7.0.15 holding this one library.
        let code = b"#!lua name=l\nredis.register_function('f', function() return 1 end)";
        let redis = b"\xf5@B#!lua name=l\nredis.register_function('f', function() return 1 end)\n\x00b\x95h\xe6_A+\xe2";
        let payload = dump_functions(&[&code[..]]);
        assert_eq!(payload, redis);
        assert_eq!(
            restore_functions(&payload, usize::MAX),
            Ok(vec![code.to_vec()])
        );
        assert_eq!(
            restore_functions(&dump_functions::<&[u8]>(&[]), usize::MAX),
            Ok(vec![])
        );
    }

    #[test]
    fn bad_payloads_get_redis_errors() {
        let mut payload = dump_functions(&[b"code"]);
        let last = payload.len() - 1;
        payload[last] ^= 1;
        assert_eq!(
            restore_functions(&payload, usize::MAX),
            Err(FunctionsError::VersionOrChecksum)
        );
        assert_eq!(
            restore_functions(b"x", usize::MAX),
            Err(FunctionsError::VersionOrChecksum)
        );
        let not_function = seal(vec![0, 1, b'a']);
        assert_eq!(
            restore_functions(&not_function, usize::MAX),
            Err(FunctionsError::NotAFunction)
        );
        let truncated = seal(vec![OPCODE_FUNCTION2, 10, b'a']);
        assert_eq!(
            restore_functions(&truncated, usize::MAX),
            Err(FunctionsError::BadLibrary)
        );
        let big = dump_functions(&[vec![b'x'; 1000]]);
        assert_eq!(
            restore_functions(&big, 100),
            Err(FunctionsError::OverBudget)
        );
    }
}
