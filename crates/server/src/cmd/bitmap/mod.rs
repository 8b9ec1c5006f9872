//! Bitmap commands: Redis's `bitops.c`. A bitmap is a string; the bit
//! arithmetic is in `keel_store::bits`.

pub mod bitcount;
pub mod bitfield;
pub mod bitop;
pub mod bitpos;
pub mod getbit;
pub mod setbit;
