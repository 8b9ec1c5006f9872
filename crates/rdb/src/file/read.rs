//! Reading an RDB file through a window of its bytes (see the module
//! comment of [`super`] for how the window grows, and [`super::scan`] for
//! how a key cut by the window's end is completed).

use std::io::{self, Read};

use super::scan::{self, Stopped};
use super::{
    opcode, Item, KeyMeta, LoadError, Problem, FIRST_VERSION_WITH_CHECKSUM, MAGIC, MAX_READ_VERSION,
};
use crate::crc64::crc64;
use crate::object::{self, kind, Budget, Refused};
use crate::{Cursor, Malformed};

/// The least a read asks the input for (more if the window has more room:
/// after a big key, reads are as big as it was).
const READ_CHUNK: usize = 64 * 1024;

/// The most the window grows by for one read.
const READ_MAX: usize = 8 * 1024 * 1024;

/// What a window may hold beyond twice the budget for one item (its
/// framing: key, opcodes, lengths).
const WINDOW_SLACK: usize = 1024 * 1024;

/// Reads an RDB file from `R`, item by item.
pub struct Reader<R: Read> {
    input: R,
    /// The window: `window[start..end]` is input read but not yet consumed.
    window: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes of input consumed (the file offset of `window[start]`).
    consumed: u64,
    input_ended: bool,
    /// The CRC of the consumed bytes.
    crc: u64,
    version: u16,
    budget: usize,
    max_window: usize,
    /// Metadata read for the next key.
    pending: KeyMeta,
    ended: bool,
    /// Whether the trailer is checked (see [`Reader::ignore_checksum`]).
    check_crc: bool,
}

/// One step of decoding: an item for the caller, or something the reader
/// keeps to itself.
enum Step {
    Item(Item),
    Expire(u64),
    Idle(u64),
    Freq(u8),
    EmptyKey,
    Eof,
}

/// Why a step did not decode.
enum Stop {
    /// The window ends before the step does: it needs `wanted` bytes at
    /// least.
    Short {
        wanted: usize,
    },
    Bad(Problem),
}

impl<R: Read> Reader<R> {
    /// Reads and checks the magic and version: accepts versions 1 to
    /// [`MAX_READ_VERSION`]. `budget` bounds what decoding one key may
    /// allocate (as [`crate::read_object_within`]).
    pub fn new(input: R, budget: usize) -> Result<Self, LoadError> {
        let mut reader = Reader {
            input,
            window: Vec::new(),
            start: 0,
            end: 0,
            consumed: 0,
            input_ended: false,
            check_crc: true,
            crc: 0,
            version: 0,
            budget,
            max_window: budget.saturating_mul(2).saturating_add(WINDOW_SLACK),
            pending: KeyMeta::default(),
            ended: false,
        };
        let header = reader.take_exact::<9>()?;
        let digits = &header[MAGIC.len()..];
        if &header[..MAGIC.len()] != MAGIC || !digits.iter().all(u8::is_ascii_digit) {
            return Err(header_error(Problem::NotRdb));
        }
        let version = digits
            .iter()
            .fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
        if version == 0 || version > MAX_READ_VERSION {
            return Err(header_error(Problem::Version(version)));
        }
        reader.crc = crc64(0, &header);
        reader.version = version;
        Ok(reader)
    }

    /// The file's RDB version.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Bytes of input consumed so far.
    pub fn offset(&self) -> u64 {
        self.consumed
    }

    /// The next item; after [`Item::End`] (the checksum checked), `End`
    /// again. Not an `Iterator`: every item can fail, and the end is an
    /// item that carries a verdict (the checksum).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Item, LoadError> {
        if self.ended {
            return Ok(Item::End);
        }
        loop {
            match decode_step(&self.window[self.start..self.end], self.budget) {
                Ok((step, used)) => {
                    self.consume(used);
                    match step {
                        Step::Item(Item::Key { key, value, .. }) => {
                            let meta = std::mem::take(&mut self.pending);
                            return Ok(Item::Key { key, value, meta });
                        }
                        Step::Item(item) => return Ok(item),
                        Step::Expire(at) => self.pending.expire_at_ms = Some(at),
                        Step::Idle(seconds) => self.pending.idle_seconds = Some(seconds),
                        Step::Freq(freq) => self.pending.lfu_freq = Some(freq),
                        Step::EmptyKey => self.pending = KeyMeta::default(),
                        Step::Eof => {
                            self.check_trailer()?;
                            self.ended = true;
                            return Ok(Item::End);
                        }
                    }
                }
                Err(Stop::Short { wanted }) => self.complete(wanted)?,
                Err(Stop::Bad(problem)) => return Err(self.error(problem)),
            }
        }
    }

    /// Reads the CRC-64 trailer without checking it, as Redis does with
    /// `rdbchecksum no`.
    pub fn ignore_checksum(&mut self) {
        self.check_crc = false;
    }

    /// The input, and the bytes read from it past the end of the file
    /// (past what was consumed, if the file was not read to its end).
    pub fn into_inner(self) -> (R, Vec<u8>) {
        let rest = self.window[self.start..self.end].to_vec();
        (self.input, rest)
    }

    /// After the EOF opcode: the CRC-64 of everything before, from version
    /// 5 on; 0 means it was not computed.
    fn check_trailer(&mut self) -> Result<(), LoadError> {
        if self.version < FIRST_VERSION_WITH_CHECKSUM {
            return Ok(());
        }
        let computed = self.crc;
        let stored = u64::from_le_bytes(self.take_exact::<8>()?);
        if self.check_crc && stored != 0 && stored != computed {
            return Err(LoadError {
                offset: self.consumed - 8,
                problem: Problem::Checksum { stored, computed },
            });
        }
        Ok(())
    }

    /// The next `N` bytes, consumed without going into the CRC.
    fn take_exact<const N: usize>(&mut self) -> Result<[u8; N], LoadError> {
        while self.end - self.start < N {
            self.fill(N)?;
        }
        let mut bytes = [0u8; N];
        bytes.copy_from_slice(&self.window[self.start..self.start + N]);
        self.start += N;
        self.consumed += N as u64;
        Ok(bytes)
    }

    fn consume(&mut self, n: usize) {
        self.crc = crc64(self.crc, &self.window[self.start..self.start + n]);
        self.start += n;
        self.consumed += n as u64;
    }

    fn error(&self, problem: Problem) -> LoadError {
        LoadError {
            offset: self.consumed,
            problem,
        }
    }

    /// The decoder needs `wanted` bytes to go on: for a key, reads until
    /// the scanner finds all of it in the window, so that it is decoded
    /// once more only; otherwise (or if the scanner and the decoder
    /// disagree on malformed bytes) reads what the decoder wanted.
    fn complete(&mut self, wanted: usize) -> Result<(), LoadError> {
        let mut resume = None;
        let mut filled = false;
        loop {
            match scan::key_length(&self.window[self.start..self.end], resume) {
                Ok(_) if filled => return Ok(()),
                Ok(_) | Err(Stopped::NotScannable) => return self.fill(wanted),
                Err(Stopped::Short {
                    wanted: more,
                    resume: at,
                }) => {
                    self.fill(more)?;
                    resume = at;
                    filled = true;
                }
            }
        }
    }

    /// Reads until the window holds at least `wanted` unconsumed bytes,
    /// and no more reads than that takes: past the end of the RDB, the
    /// input may have nothing for a while.
    fn fill(&mut self, wanted: usize) -> Result<(), LoadError> {
        let mut held = self.end - self.start;
        if self.input_ended {
            return Err(self.truncated());
        }
        if wanted > self.max_window {
            return Err(self.error(Problem::OverBudget));
        }
        if self.start > 0 {
            self.window.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = held;
        }
        while held < wanted {
            let ask = (wanted - held).clamp(READ_CHUNK, READ_MAX);
            if self.window.len() < held + ask {
                self.window.resize(held + ask, 0);
            }
            let n = loop {
                match self.input.read(&mut self.window[held..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(self.error(Problem::Io(e))),
                }
            };
            held += n;
            self.end = held;
            if n == 0 {
                self.input_ended = true;
                return Err(self.truncated());
            }
        }
        Ok(())
    }

    /// The input ended before the file: where it ended.
    fn truncated(&self) -> LoadError {
        LoadError {
            offset: self.consumed + (self.end - self.start) as u64,
            problem: Problem::Truncated,
        }
    }
}

/// A problem with the file's first bytes, its magic and version.
fn header_error(problem: Problem) -> LoadError {
    LoadError { offset: 0, problem }
}

/// Decodes one step from the front of `bytes`: its item and size.
fn decode_step(bytes: &[u8], budget: usize) -> Result<(Step, usize), Stop> {
    let mut c = Cursor::new(bytes);
    let mut b = Budget::new(budget);
    let step = step(&mut c, &mut b).map_err(|failure| match failure {
        Failure::Problem(problem) => Stop::Bad(problem),
        Failure::Decode => match b.refusal(&c) {
            Refused::Truncated => Stop::Short { wanted: c.wanted() },
            Refused::OverBudget => Stop::Bad(Problem::OverBudget),
            Refused::Malformed | Refused::Empty => Stop::Bad(Problem::BadObject),
        },
    })?;
    Ok((step, c.pos()))
}

/// A step that failed: in the object decoder (what failed is in the cursor
/// and budget), or for a reason of its own.
enum Failure {
    Decode,
    Problem(Problem),
}

impl From<Malformed> for Failure {
    fn from(_: Malformed) -> Self {
        Failure::Decode
    }
}

fn step(c: &mut Cursor, b: &mut Budget) -> Result<Step, Failure> {
    let op = c.byte()?;
    Ok(match op {
        opcode::EXPIRETIME_MS => Step::Expire(u64::try_from(c.int_le(8)?).unwrap_or(0)),
        opcode::EXPIRETIME => Step::Expire(
            u64::try_from(c.int_le(4)?)
                .unwrap_or(0)
                .saturating_mul(1000),
        ),
        opcode::IDLE => Step::Idle(object::read_length(c)?),
        opcode::FREQ => Step::Freq(c.byte()?),
        opcode::AUX => Step::Item(Item::Aux {
            key: object::read_string(c, b)?,
            value: object::read_string(c, b)?,
        }),
        opcode::FUNCTION2 => Step::Item(Item::Functions(object::read_string(c, b)?)),
        opcode::FUNCTION_PRE_GA => return Err(Failure::Problem(Problem::FunctionPreGa)),
        opcode::MODULE_AUX | kind::MODULE | kind::MODULE_2 => {
            return Err(Failure::Problem(Problem::Module))
        }
        opcode::SELECTDB => Step::Item(Item::SelectDb(object::read_length(c)?)),
        opcode::RESIZEDB => Step::Item(Item::ResizeDb {
            keys: object::read_length(c)?,
            expires: object::read_length(c)?,
        }),
        opcode::EOF => Step::Eof,
        t if kind::is_object_type(t) => {
            let key = object::read_string(c, b)?;
            let value = object::read_value(t, c, b)?;
            match object::check(&value) {
                Ok(()) => Step::Item(Item::Key {
                    key,
                    value,
                    meta: KeyMeta::default(),
                }),
                Err(Refused::Empty) => Step::EmptyKey,
                Err(_) => return Err(Failure::Problem(Problem::BadObject)),
            }
        }
        t => return Err(Failure::Problem(Problem::UnknownOpcodeOrType(t))),
    })
}
