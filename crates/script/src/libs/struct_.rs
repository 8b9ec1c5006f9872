//! `struct`: Roberto Ierusalimschy's struct library 0.2 as Redis bundles it
//! (`deps/lua/src/lua_struct.c`), the global table `struct` with `pack`,
//! `unpack` and `size`, converting between Lua values and C structs laid
//! out in strings.
//!
//! A format is read one byte at a time up to its end or its first NUL, as
//! the C code reads a C string:
//! - `<` little endian, `>` big endian (native, little, by default), `!n`
//!   maximum alignment `n` (a power of 2; `!` alone is 8), ` ` ignored;
//! - `b`/`B` signed/unsigned char (1 byte), `h`/`H` short (2), `l`/`L`
//!   long (8), `T` size_t (8), `in`/`In` integers of `n` bytes (default 4,
//!   at most 32), `f` float, `d` double, `x` one padding byte;
//! - `cn` `n` bytes of a string (`c0`: the whole string when packing, the
//!   length read just before when unpacking), `s` a zero-terminated string.
//!
//! Each item is aligned to the smaller of its size and the maximum
//! alignment (`c` never is). Integers are packed from the number converted
//! to a 64-bit integer as x86-64 converts a double (out-of-range values
//! become `0x8000000000000000`, or 0 above 2^64) and sign- or zero-extended
//! beyond 8 bytes; they are unpacked into doubles, so beyond 2^53 they lose
//! precision as in Redis. Sizes and counts in formats overflow at `INT_MAX`
//! with `integral size overflow`, and every length is checked against the
//! data before anything is read or copied, so no input allocates more than
//! the strings it was given. `unpack` stops with `stack overflow (too many
//! results)` where Lua 5.1's 8000-slot C stack would.

use mlua::{Lua, MultiValue, Value};

use super::bit::{
    arg_error, check_bytes, check_number, lib_table, message, single, to_number, LibResult, Results,
};

/// Largest `n` of `in`/`In`.
const MAX_INT_SIZE: usize = 32;
/// The default maximum alignment of `!`: the alignment of a double.
const MAX_ALIGN: usize = 8;
/// Lua 5.1's `LUAI_MAXCSTACK`: the most values a C function's frame holds.
const MAX_C_STACK: usize = 8000;

type StructFn = fn(&Lua, MultiValue) -> LibResult<MultiValue>;

/// Sets the global table `struct`.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    let functions: [(&str, StructFn); 3] = [("pack", pack), ("unpack", unpack), ("size", size)];
    lua.globals().raw_set("struct", lib_table(lua, &functions)?)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

/// A format being read, with the options set so far.
struct Format<'a> {
    bytes: &'a [u8],
    at: usize,
    endian: Endian,
    align: usize,
}

impl<'a> Format<'a> {
    fn new(format: &'a [u8]) -> Self {
        let end = format.iter().position(|&b| b == 0).unwrap_or(format.len());
        Format {
            bytes: &format[..end],
            at: 0,
            endian: Endian::Little,
            align: 1,
        }
    }

    fn next_option(&mut self) -> Option<u8> {
        let opt = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(opt)
    }

    /// The decimal number at the cursor, or `default` when there is none.
    fn number(&mut self, default: usize) -> LibResult<usize> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: usize = 0;
        while let Some(&digit) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            let digit = usize::from(digit - b'0');
            if n > i32::MAX as usize / 10 || n * 10 > i32::MAX as usize - digit {
                return message("integral size overflow");
            }
            n = n * 10 + digit;
            self.at += 1;
        }
        Ok(n)
    }

    /// The size of option `opt`, reading its count; 0 for the options that
    /// take no room (and for unknown ones, which callers reject).
    fn size_of(&mut self, opt: u8) -> LibResult<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    return message(format!(
                        "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// Padding that aligns an item of `size` bytes at offset `offset`.
    fn padding(&self, offset: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        (size.wrapping_sub(offset & (size - 1))) & (size - 1)
    }

    /// The options that set endianness and alignment; any other is invalid.
    fn control(&mut self, opt: u8) -> LibResult<()> {
        match opt {
            b' ' => {}
            b'>' => self.endian = Endian::Big,
            b'<' => self.endian = Endian::Little,
            b'!' => {
                let align = self.number(MAX_ALIGN)?;
                if !align.is_power_of_two() {
                    return message(format!("alignment {align} is not a power of 2"));
                }
                self.align = align;
            }
            _ => {
                let mut msg = b"invalid format option '".to_vec();
                msg.extend_from_slice(&[opt, b'\'']);
                return arg_error(1, msg);
            }
        }
        Ok(())
    }
}

/// A double converted to a 64-bit integer as x86-64 does it: truncated,
/// and `0x8000000000000000` when out of range or NaN.
fn truncate(n: f64) -> u64 {
    if n > -9_223_372_036_854_775_809.0 && n < 9_223_372_036_854_775_808.0 {
        n as i64 as u64
    } else {
        1 << 63
    }
}

/// The bits `putinteger` stores: `(unsigned long)(long)n` for negative
/// numbers, `(unsigned long)n` (as the compiler lowers it) for the others.
fn integer_bits(n: f64) -> u64 {
    if n >= 9_223_372_036_854_775_808.0 {
        truncate(n - 9_223_372_036_854_775_808.0) ^ (1 << 63)
    } else {
        truncate(n)
    }
}

/// `size` bytes of `bits` in `endian` order; bytes beyond the eighth are
/// zero (the C code shifts the value out).
fn put_integer(out: &mut Vec<u8>, bits: u64, endian: Endian, size: usize) {
    let byte = |i: usize| if i < 8 { (bits >> (8 * i)) as u8 } else { 0 };
    match endian {
        Endian::Little => out.extend((0..size).map(byte)),
        Endian::Big => out.extend((0..size).rev().map(byte)),
    }
}

/// The integer in `bytes`, sign-extended from its top bit when `signed`,
/// as a Lua number.
fn get_integer(bytes: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut bits: u64 = 0;
    let mut push = |b: &u8| bits = (bits << 8) | u64::from(*b);
    match endian {
        Endian::Big => bytes.iter().for_each(&mut push),
        Endian::Little => bytes.iter().rev().for_each(&mut push),
    }
    if !signed {
        return bits as f64;
    }
    // The C shift count is taken modulo 64, as x86-64 does.
    let sign_shift = (bytes.len() as u32).wrapping_mul(8).wrapping_sub(1);
    let mask = u64::MAX.wrapping_shl(sign_shift);
    if bits & mask != 0 {
        bits |= mask;
    }
    bits as i64 as f64
}

/// `struct.pack(format, ...)`.
fn pack(lua: &Lua, mut args: MultiValue) -> LibResult<MultiValue> {
    let format = check_bytes(lua, &args, 1)?;
    // The C code then pushes a nil after the arguments, which is what a
    // missing first value reads as.
    args.push_back(Value::Nil);
    let format = format.as_bytes();
    let mut fmt = Format::new(&format);
    let mut arg = 2;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size_of(opt)?;
        let padding = fmt.padding(out.len(), opt, size);
        out.resize(out.len() + padding, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, &args, arg)?;
                arg += 1;
                put_integer(&mut out, integer_bits(n), fmt.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, &args, arg)? as f32;
                arg += 1;
                match fmt.endian {
                    Endian::Little => out.extend_from_slice(&f.to_le_bytes()),
                    Endian::Big => out.extend_from_slice(&f.to_be_bytes()),
                }
            }
            b'd' => {
                let d = check_number(lua, &args, arg)?;
                arg += 1;
                match fmt.endian {
                    Endian::Little => out.extend_from_slice(&d.to_le_bytes()),
                    Endian::Big => out.extend_from_slice(&d.to_be_bytes()),
                }
            }
            b'c' | b's' => {
                let s = check_bytes(lua, &args, arg)?;
                let s = s.as_bytes();
                arg += 1;
                let size = if size == 0 { s.len() } else { size };
                if s.len() < size {
                    // The C code names the argument after the string.
                    return arg_error(arg, "string too short");
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(opt)?,
        }
    }
    single(Value::String(lua.create_string(&out)?))
}

/// `struct.unpack(format, data [, offset])`: the values, then the offset
/// after the last one.
fn unpack(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let format = check_bytes(lua, &args, 1)?;
    let format = format.as_bytes();
    let data = check_bytes(lua, &args, 2)?;
    let data = data.as_bytes();
    // The offset is converted to size_t: only 0 is refused, a negative one
    // wraps around and is too far for any data.
    let offset = match args.get(2) {
        None | Some(Value::Nil) => 1,
        Some(_) => truncate(check_number(lua, &args, 3)?),
    };
    if offset == 0 {
        return arg_error(3, "offset must be 1 or greater");
    }
    let stack_base = args.len().max(2);
    let mut pos = (offset - 1) as usize;
    let mut fmt = Format::new(&format);
    let mut results = Results::new(lua)?;
    let data_fits = |pos: usize, size: usize| size <= data.len() && pos <= data.len() - size;
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size_of(opt)?;
        pos = pos.wrapping_add(fmt.padding(pos, opt, size));
        if !data_fits(pos, size) {
            return arg_error(2, "data string too short");
        }
        if stack_base + results.len() + 2 > MAX_C_STACK {
            return message("stack overflow (too many results)");
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &data[pos..pos + size];
                let signed = opt.is_ascii_lowercase();
                results.push(Value::Number(get_integer(bytes, fmt.endian, signed)))?;
            }
            b'x' => {}
            b'f' => {
                let bytes: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let f = match fmt.endian {
                    Endian::Little => f32::from_le_bytes(bytes),
                    Endian::Big => f32::from_be_bytes(bytes),
                };
                results.push(Value::Number(f64::from(f)))?;
            }
            b'd' => {
                let bytes: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let d = match fmt.endian {
                    Endian::Little => f64::from_le_bytes(bytes),
                    Endian::Big => f64::from_be_bytes(bytes),
                };
                results.push(Value::Number(d))?;
            }
            b'c' => {
                if size == 0 {
                    // The C code reads the value it pushed last, if any.
                    let previous = if results.len() > 0 {
                        Some(results.pop()?)
                    } else {
                        None
                    };
                    let Some(length) = to_number(lua, previous.as_ref())? else {
                        return message("format 'c0' needs a previous size");
                    };
                    size = truncate(length) as usize;
                    if !data_fits(pos, size) {
                        return arg_error(2, "data string too short");
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size])?))?;
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return message("unfinished string in data");
                };
                results.push(Value::String(lua.create_string(&data[pos..pos + len])?))?;
                size = len + 1;
            }
            _ => fmt.control(opt)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Value::Number(pos.wrapping_add(1) as i64 as f64))?;
    Ok(results.into_multi())
}

/// `struct.size(format)`: the bytes `pack` would produce. Unknown letters
/// and digits count for nothing, as in the C code; other unknown options
/// are invalid.
fn size(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let format = check_bytes(lua, &args, 1)?;
    let format = format.as_bytes();
    let mut fmt = Format::new(&format);
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size_of(opt)?;
        pos = pos.wrapping_add(fmt.padding(pos, opt, size));
        if opt == b's' {
            return arg_error(1, "option 's' has no fixed size");
        }
        if opt == b'c' && size == 0 {
            return arg_error(1, "option 'c0' has no fixed size");
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt)?;
        }
        pos = pos.wrapping_add(size);
    }
    single(Value::Number(pos as i64 as f64))
}

#[cfg(test)]
mod tests {
    fn cases() -> &'static [(&'static str, &'static str)] {
        &[
            (r#"local t={} for k,v in pairs(struct) do t[#t+1]=k..'='..type(v) end table.sort(t) return table.concat(t, ' ')"#, "ok:pack=function size=function unpack=function"),
            (r#"return hex(struct.pack('bBhHlLTiI', -1, 255, -2, 65534, -3, 7, 8, -4, 9))"#, "ok:fffffefffefffdffffffffffffff07000000000000000800000000000000fcffffff09000000"),
            (r#"return hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 7, 8, -4, 9))"#, "ok:fffffffefffefffffffffffffffd00000000000000070000000000000008fffffffc00000009"),
            (r#"return hex(struct.pack('<i3I5i1', -2, 2^33 + 5, 127))"#, "ok:feffff05000000027f"),
            (r#"return hex(struct.pack('>i17', -1)) .. ' ' .. hex(struct.pack('<I17', 1)) .. ' ' .. hex(struct.pack('<i12', -2))"#, "ok:000000000000000000ffffffffffffffff 0100000000000000000000000000000000 feffffffffffffff00000000"),
            (r#"return hex(struct.pack('i32', 1))"#, "ok:0100000000000000000000000000000000000000000000000000000000000000"),
            (r#"return struct.pack('i33', 1)"#, "err:user_script:1: integral size 33 is larger than limit of 32"),
            (r#"return struct.pack('i99999999999', 1)"#, "err:user_script:1: integral size overflow"),
            (r#"return struct.pack('c99999999999', 'a')"#, "err:user_script:1: integral size overflow"),
            (r#"return struct.pack('!2147483648', 'a')"#, "err:user_script:1: integral size overflow"),
            (r#"return struct.pack('c2147483647', 'a')"#, "err:user_script:1: bad argument #3 to 'pack' (string too short)"),
            (r#"return hex(struct.pack('i0', 1)) .. '|' .. hex(struct.pack('c0', 'abc')) .. '|' .. hex(struct.pack('c', 'abc')) .. '|' .. hex(struct.pack('c2', 'abc'))"#, "ok:|616263|61|6162"),
            (r#"return hex(struct.pack('s', 'ab')) .. '|' .. hex(struct.pack('s', 'a\0b'))"#, "ok:616200|61006200"),
            (r#"return hex(struct.pack('>f', 1.5)) .. ' ' .. hex(struct.pack('<f', 0.1)) .. ' ' .. hex(struct.pack('>d', 0.1)) .. ' ' .. hex(struct.pack('<d', -1e-3))"#, "ok:3fc00000 cdcccc3d 3fb999999999999a fca9f1d24d6250bf"),
            (r#"return hex(struct.pack('>f', 1e300)) .. ' ' .. hex(struct.pack('>f', 0/0)) .. ' ' .. hex(struct.pack('>d', 1/0))"#, "ok:7f800000 ffc00000 7ff0000000000000"),
            (r#"return hex(struct.pack('!bd', 1, 2)) .. ' ' .. hex(struct.pack('!4bd', 1, 2)) .. ' ' .. hex(struct.pack('!2bih', 1, 2, 3)) .. ' ' .. hex(struct.pack('!8bxh', 1, 3))"#, "ok:01000000000000000000000000000040 010000000000000000000040 0100020000000300 01000300"),
            (r#"return hex(struct.pack('!8b i3', 1, 2)) .. ' ' .. hex(struct.pack('!8bbi3', 1, 1, 2)) .. ' ' .. hex(struct.pack('!8bc3i', 1, 'abc', 2))"#, "ok:010000020000 0101020000 0161626302000000"),
            (r#"return hex(struct.pack('!1bd', 1, 2))"#, "ok:010000000000000040"),
            (r#"return struct.pack('!3', 1)"#, "err:user_script:1: alignment 3 is not a power of 2"),
            (r#"return struct.pack('!0', 1)"#, "err:user_script:1: alignment 0 is not a power of 2"),
            (r#"return hex(struct.pack('!', 1))"#, "ok:"),
            (r#"return struct.pack('q', 1)"#, "err:user_script:1: bad argument #1 to 'pack' (invalid format option 'q')"),
            (r#"return struct.pack('b@', 1)"#, "err:user_script:1: bad argument #1 to 'pack' (invalid format option '@')"),
            (r#"return struct.pack('i', 'x')"#, "err:user_script:1: bad argument #2 to 'pack' (number expected, got string)"),
            (r#"return hex(struct.pack('i', '12')) .. ' ' .. hex(struct.pack('i', ' 0x10 '))"#, "ok:0c000000 10000000"),
            (r#"return struct.pack('c2', 'x')"#, "err:user_script:1: bad argument #3 to 'pack' (string too short)"),
            (r#"return struct.pack('bc2', 1, 'x')"#, "err:user_script:1: bad argument #4 to 'pack' (string too short)"),
            (r#"return struct.pack('i')"#, "err:user_script:1: bad argument #2 to 'pack' (number expected, got nil)"),
            (r#"return struct.pack('c', 5)"#, "ok:5"),
            (r#"return hex(struct.pack('c0', 12.5))"#, "ok:31322e35"),
            (r#"return struct.pack('c', {})"#, "err:user_script:1: bad argument #2 to 'pack' (string expected, got table)"),
            (r#"return struct.pack()"#, "err:user_script:1: bad argument #1 to 'pack' (string expected, got no value)"),
            (r#"return struct.pack({})"#, "err:user_script:1: bad argument #1 to 'pack' (string expected, got table)"),
            (r#"return hex(struct.pack(12))"#, "err:user_script:1: bad argument #1 to 'pack' (invalid format option '1')"),
            (r#"return hex(struct.pack('b\0b', 1, 2))"#, "ok:01"),
            (r#"return hex(struct.pack('  < b > h', 1, 2))"#, "ok:010002"),
            (r#"return hex(struct.pack('>L', 2^64)) .. ' ' .. hex(struct.pack('>L', 2^70)) .. ' ' .. hex(struct.pack('>L', 0/0)) .. ' ' .. hex(struct.pack('>L', 1/0)) .. ' ' .. hex(struct.pack('>l', -1/0))"#, "ok:0000000000000000 0000000000000000 8000000000000000 0000000000000000 8000000000000000"),
            (r#"return hex(struct.pack('>l', -2^64)) .. ' ' .. hex(struct.pack('>l', 2^63)) .. ' ' .. hex(struct.pack('>l', -0.5)) .. ' ' .. hex(struct.pack('>i3', -1.5)) .. ' ' .. hex(struct.pack('>L', 2^63 + 2^62)) .. ' ' .. hex(struct.pack('>l', 2.9))"#, "ok:8000000000000000 8000000000000000 0000000000000000 ffffff c000000000000000 0000000000000002"),
            (r#"return hex(struct.pack('>L', 2^64 - 2048)) .. ' ' .. hex(struct.pack('>l', -2^63))"#, "ok:fffffffffffff800 8000000000000000"),
            (r#"return hex(struct.pack('x')) .. ' ' .. hex(struct.pack('xxbx', 7))"#, "ok:00 00000700"),
            (r#"return table.concat({struct.unpack('bBhHlLTiI', struct.pack('bBhHlLTiI', -1, 255, -2, 65534, -3, 7, 8, -4, 9))}, ',')"#, "ok:-1,255,-2,65534,-3,7,8,-4,9,39"),
            (r#"return table.concat({struct.unpack('>bBhHlLTiI', struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 7, 8, -4, 9))}, ',')"#, "ok:-1,255,-2,65534,-3,7,8,-4,9,39"),
            (r#"return table.concat({struct.unpack('>i3', '\255\255\254')}, ',')"#, "ok:-2,4"),
            (r#"return table.concat({struct.unpack('<i3I3', '\255\255\254\255\255\254')}, ',')"#, "ok:-65537,16711679,7"),
            (r#"return table.concat({struct.unpack('<i9', '\255\255\255\255\255\255\255\255\255')}, ',')"#, "ok:-1,10"),
            (r#"return table.concat({struct.unpack('<i9', '\0\0\0\0\0\0\0\128\1')}, ',')"#, "ok:-128,10"),
            (r#"return table.concat({struct.unpack('>i9', '\1\0\0\0\0\0\0\0\128')}, ',')"#, "ok:-128,10"),
            (r#"return table.concat({struct.unpack('<I8', '\255\255\255\255\255\255\255\255')}, ',')"#, "ok:1.844674407371e+19,9"),
            (r#"return table.concat({struct.unpack('<l', '\255\255\255\255\255\255\255\127')}, ',')"#, "ok:9.2233720368548e+18,9"),
            (r#"return table.concat({struct.unpack('<i16', string.rep('\255', 16))}, ',')"#, "ok:-1,17"),
            (r#"return table.concat({struct.unpack('<i0', 'abc')}, ',')"#, "ok:0,1"),
            (r#"return table.concat({struct.unpack('<I0', '')}, ',')"#, "ok:0,1"),
            (r#"return table.concat({struct.unpack('>f', struct.pack('>f', 1.5))}, ',') .. ' ' .. table.concat({struct.unpack('<d', struct.pack('<d', 0.1))}, ',')"#, "ok:1.5,5 0.1,9"),
            (r#"return table.concat({struct.unpack('>d', '\255\248\0\0\0\0\0\0')}, ',')"#, "ok:-nan,9"),
            (r#"return table.concat({struct.unpack('bc0', '\2abc')}, ',')"#, "ok:ab,4"),
            (r#"return table.concat({struct.unpack('b c0', '\2abc')}, ',')"#, "ok:ab,4"),
            (r#"return table.concat({struct.unpack('c1c0', '3abcd')}, ',')"#, "ok:abc,5"),
            (r#"return table.concat({struct.unpack('c1c0', 'xabcd')}, ',')"#, "err:user_script:1: format 'c0' needs a previous size"),
            (r#"return table.concat({struct.unpack('bc0', '\5abc')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('bc0', '\255abc')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('c0', 'abc')}, ',')"#, "err:user_script:1: format 'c0' needs a previous size"),
            (r#"return table.concat({struct.unpack('xc0', 'abc')}, ',')"#, "err:user_script:1: format 'c0' needs a previous size"),
            (r#"return table.concat({struct.unpack('b', 'abc', 0)}, ',')"#, "err:user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"),
            (r#"return table.concat({struct.unpack('b', 'abc', -5)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('b', 'abc', 4)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('b', 'abc', 3)}, ',')"#, "ok:99,4"),
            (r#"return table.concat({struct.unpack('b', 'abc', 3.9)}, ',')"#, "ok:99,4"),
            (r#"return table.concat({struct.unpack('b', 'abc', '2')}, ',')"#, "ok:98,3"),
            (r#"return table.concat({struct.unpack('b', 'abc', 'x')}, ',')"#, "err:user_script:1: bad argument #3 to 'unpack' (number expected, got string)"),
            (r#"return table.concat({struct.unpack('b', 'abc', nil)}, ',')"#, "ok:97,2"),
            (r#"return table.concat({struct.unpack('', 'abc', 4)}, ',')"#, "ok:4"),
            (r#"return table.concat({struct.unpack('', 'abc', 5)}, ',')"#, "ok:5"),
            (r#"return table.concat({struct.unpack('', 'abc', 2^53)}, ',')"#, "ok:9.007199254741e+15"),
            (r#"return table.concat({struct.unpack('b', 'abc', 2^63)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('s', 'ab')}, ',')"#, "err:user_script:1: unfinished string in data"),
            (r#"return table.concat({struct.unpack('ss', 'ab\0cd\0e')}, ',')"#, "ok:ab,cd,7"),
            (r#"return table.concat({struct.unpack('s', '')}, ',')"#, "err:user_script:1: unfinished string in data"),
            (r#"return table.concat({struct.unpack('!4bi', '\1\0\0\0\2\0\0\0')}, ',')"#, "ok:1,2,9"),
            (r#"return table.concat({struct.unpack('!4bi', '\1\0\0\0\2\0\0')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('!4bi', '\1\0\0\0\2\0\0\0', 2)}, ',')"#, "ok:0,2,9"),
            (r#"return table.concat({struct.unpack('c3', 'ab')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('q', 'ab')}, ',')"#, "err:user_script:1: bad argument #1 to 'unpack' (invalid format option 'q')"),
            (r#"return table.concat({struct.unpack('c2147483647', 'ab')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('i40', 'ab')}, ',')"#, "err:user_script:1: integral size 40 is larger than limit of 32"),
            (r#"return table.concat({struct.unpack('b')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (string expected, got no value)"),
            (r#"return table.concat({struct.unpack()}, ',')"#, "err:user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"),
            (r#"return table.concat({struct.unpack('b', 12)}, ',')"#, "ok:49,2"),
            (r#"return select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 8000)))"#, "ok:7998"),
            (r#"return select('#', struct.unpack(string.rep('b', 7998), string.rep('a', 8000)))"#, "err:user_script:1: stack overflow (too many results)"),
            (r#"return select('#', struct.unpack(string.rep('b', 7996), string.rep('a', 8000), 1))"#, "ok:7997"),
            (r#"return select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 8000), 1))"#, "err:user_script:1: stack overflow (too many results)"),
            (r#"return select('#', struct.unpack(string.rep('b', 7997) .. 'x', string.rep('a', 8000)))"#, "err:user_script:1: stack overflow (too many results)"),
            (r#"return select('#', struct.unpack(string.rep('x', 9000), string.rep('a', 9000)))"#, "ok:1"),
            (r#"return select('#', struct.unpack(string.rep('b', 9000), string.rep('a', 10)))"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return struct.size('i4i8') .. ' ' .. struct.size('!8bd') .. ' ' .. struct.size('bd') .. ' ' .. struct.size('!4bhi') .. ' ' .. struct.size('c10') .. ' ' .. struct.size('')"#, "ok:12 16 9 8 10 0"),
            (r#"return struct.size('q') .. ' ' .. struct.size('Q9') .. ' ' .. struct.size('bq9') .. ' ' .. struct.size('b9')"#, "ok:0 0 1 1"),
            (r#"return struct.size('s')"#, "err:user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"),
            (r#"return struct.size('c0')"#, "err:user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"),
            (r#"return struct.size('@')"#, "err:user_script:1: bad argument #1 to 'size' (invalid format option '@')"),
            (r#"return struct.size('!')"#, "ok:0"),
            (r#"return struct.size('!3')"#, "err:user_script:1: alignment 3 is not a power of 2"),
            (r#"return struct.size('i64')"#, "err:user_script:1: integral size 64 is larger than limit of 32"),
            (r#"return struct.size('c2147483647c2147483647')"#, "ok:4294967294"),
            (r#"return struct.size()"#, "err:user_script:1: bad argument #1 to 'size' (string expected, got no value)"),
            (r#"return struct.size(5)"#, "ok:0"),
            (r#"return struct.size(nil)"#, "err:user_script:1: bad argument #1 to 'size' (string expected, got nil)"),
            (r#"return struct.pack('bi', 1)"#, "err:user_script:1: bad argument #3 to 'pack' (number expected, got nil)"),
            (r#"return struct.pack('bbi', 1)"#, "err:user_script:1: bad argument #3 to 'pack' (number expected, got nil)"),
            (r#"return table.concat({struct.unpack('b', 'abc', -1)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('b', 'abc', 0.5)}, ',')"#, "err:user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"),
            (r#"return table.concat({struct.unpack('b', 'abc', -0.5)}, ',')"#, "err:user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"),
            (r#"return table.concat({struct.unpack('b', 'abc', 0/0)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('b', 'abc', 1/0)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('b', 'abc', -2^63)}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack' (data string too short)"),
            (r#"return table.concat({struct.unpack('bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', string.rep('\1', 50))}, ',')"#, "ok:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,43"),
            (r#"return select('#', struct.unpack(string.rep('c1', 7997), string.rep('a', 8000)))"#, "ok:7998"),
            (r#"local t = {struct.unpack(string.rep('s', 7997), string.rep('a\0', 8000))} return #t .. t[7997] .. t[7998]"#, "ok:7998a15995"),
            (r#"return select('#', struct.unpack(string.rep('c1', 7998), string.rep('a', 8000)))"#, "err:user_script:1: stack overflow (too many results)"),
            (r#"return hex(struct.pack('<d', -0.0)) .. hex(struct.pack('>d', 1e-300)) .. hex(struct.pack('>f', -1e-30))"#, "ok:000000000000008001a56e1fc2f8f3598da24260"),
            (r#"return table.concat({struct.unpack('bc0', '\0')}, ',')"#, "ok:,2"),
            (r#"return table.concat({struct.unpack('Bc0c0', '\2ab')}, ',')"#, "err:user_script:1: format 'c0' needs a previous size"),
            (r#"return table.concat({struct.unpack('c1c0', '2ab')}, ',')"#, "ok:ab,4"),
            (r#"return table.concat({struct.unpack('c1c0', ' 2 ab')}, ',')"#, "err:user_script:1: format 'c0' needs a previous size"),]
    }

    use super::super::bit::tests::survives;
    use mlua::Value;

    const FORMAT: &[u8] = b"<>!=xbBhHlLTiIfdsc0123456789 q";

    #[test]
    fn random_formats_never_panic() {
        survives("struct.unpack", 20000, |lua, rng| {
            let format = lua.create_string(rng.bytes(FORMAT, 12)).expect("format");
            let data = lua
                .create_string(rng.bytes(b"\0\x01\xff2a", 40))
                .expect("data");
            let mut args = vec![Value::String(format), Value::String(data)];
            if rng.below(3) == 0 {
                args.push(Value::Integer(rng.below(50) as i64 - 5));
            }
            args
        });
        survives("struct.pack", 20000, |lua, rng| {
            let format = lua.create_string(rng.bytes(FORMAT, 12)).expect("format");
            let mut args = vec![Value::String(format)];
            for _ in 0..rng.below(6) {
                args.push(match rng.below(3) {
                    0 => Value::Number(f64::from_bits(rng.below(usize::MAX) as u64)),
                    1 => Value::Integer(rng.below(1000) as i64 - 500),
                    _ => Value::String(lua.create_string(rng.bytes(b"ab\0", 10)).expect("arg")),
                });
            }
            args
        });
        survives("struct.size", 20000, |lua, rng| {
            vec![Value::String(
                lua.create_string(rng.bytes(FORMAT, 12)).expect("format"),
            )]
        });
    }

    #[test]
    fn matches_redis() {
        super::super::bit::tests::check(cases());
    }
}
