//! Writing an RDB file: items go into a buffer, which goes to the output
//! (and into the running CRC) whenever it passes [`FLUSH_AT`] bytes.

use std::io::{self, Write};

use super::{opcode, KeyMeta, MAGIC};
use crate::crc64::crc64;
use crate::object::{self, CompressorSlot};
use crate::payload::RDB_VERSION;
use crate::{Thresholds, Value};

/// Bytes buffered before a write to the output.
const FLUSH_AT: usize = 64 * 1024;

/// How a file is written (Redis's config names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// `rdbchecksum`: false writes a zero trailer, which readers skip.
    pub checksum: bool,
    /// `rdbcompression`: false never LZF-compresses a string.
    pub compression: bool,
    /// Which values take their compact encodings.
    pub thresholds: Thresholds,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            checksum: true,
            compression: true,
            thresholds: Thresholds::default(),
        }
    }
}

/// Writes an RDB file of version 10 (Redis 7.0's) to `W`.
pub struct Writer<W: Write> {
    out: W,
    options: WriteOptions,
    buf: Vec<u8>,
    /// The CRC of what has gone to `out`.
    crc: u64,
    /// Bytes that have gone to `out`.
    flushed: u64,
    compressor: CompressorSlot,
}

impl<W: Write> Writer<W> {
    /// Writes the magic and version ("REDIS0010").
    pub fn new(out: W, options: WriteOptions) -> io::Result<Self> {
        let mut w = Writer {
            out,
            options,
            buf: Vec::with_capacity(FLUSH_AT * 2),
            crc: 0,
            flushed: 0,
            compressor: None,
        };
        w.buf.extend_from_slice(MAGIC);
        w.buf
            .extend_from_slice(format!("{RDB_VERSION:04}").as_bytes());
        Ok(w)
    }

    /// An AUX field; `value`, when a small canonical integer, int-encoded
    /// as Redis's `rdbSaveAuxFieldStrInt` writes it.
    pub fn aux(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.buf.push(opcode::AUX);
        self.string(key);
        self.string(value);
        self.maybe_flush()
    }

    /// One function library (a FUNCTION2 record).
    pub fn functions(&mut self, library_code: &[u8]) -> io::Result<()> {
        self.buf.push(opcode::FUNCTION2);
        self.string(library_code);
        self.maybe_flush()
    }

    /// Starts database `db`, holding `keys` keys of which `expires` expire.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> io::Result<()> {
        self.buf.push(opcode::SELECTDB);
        self.length(db);
        self.buf.push(opcode::RESIZEDB);
        self.length(keys);
        self.length(expires);
        self.maybe_flush()
    }

    /// A key with its value, after its metadata as Redis's
    /// `rdbSaveKeyValuePair` writes it: expiry, idle time, frequency.
    pub fn key(&mut self, key: &[u8], value: &Value, meta: KeyMeta) -> io::Result<()> {
        if let Some(at) = meta.expire_at_ms {
            self.buf.push(opcode::EXPIRETIME_MS);
            self.buf.extend_from_slice(&at.to_le_bytes());
        }
        if let Some(idle) = meta.idle_seconds {
            self.buf.push(opcode::IDLE);
            self.length(idle);
        }
        if let Some(freq) = meta.lfu_freq {
            self.buf.extend_from_slice(&[opcode::FREQ, freq]);
        }
        // The type byte goes before the key: write the object after a
        // placeholder, then move its type byte into it.
        let type_at = self.buf.len();
        self.buf.push(0);
        self.string(key);
        let body_at = self.buf.len();
        let compressor = self.options.compression.then_some(&mut self.compressor);
        object::write_object_with(value, &self.options.thresholds, compressor, &mut self.buf);
        self.buf[type_at] = self.buf.remove(body_at);
        self.maybe_flush()
    }

    /// Bytes written so far, buffered ones included.
    pub fn bytes_written(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Ends the file: EOF and the CRC-64 of everything before it (0 when
    /// checksums are off); returns the output, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.buf.push(opcode::EOF);
        self.flush_buf()?;
        let crc = if self.options.checksum { self.crc } else { 0 };
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn string(&mut self, s: &[u8]) {
        let compressor = self.options.compression.then_some(&mut self.compressor);
        object::Writer::new(&mut self.buf, compressor).string(s);
    }

    fn length(&mut self, n: u64) {
        object::Writer::new(&mut self.buf, None).length(n);
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        if self.options.checksum {
            self.crc = crc64(self.crc, &self.buf);
        }
        self.out.write_all(&self.buf)?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        // A big value grew the buffer: give that memory back.
        self.buf.shrink_to(FLUSH_AT * 2);
        Ok(())
    }
}
