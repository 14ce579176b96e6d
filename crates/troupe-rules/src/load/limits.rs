//! Every bound the loader enforces, in one place (Format 16). Going over any
//! of them is a LIMIT diagnostic, never a crash or an unbounded allocation.

/// Largest file the loader reads, in bytes: 64 MiB (Format 16). Checked from
/// the file's metadata before it is read, and again while reading.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Deepest nesting of arrays and objects (mappings and sequences) in one
/// document: 128 (Format 16). `{}` has depth 1, `{"a": [1]}` depth 2.
pub const MAX_DEPTH: usize = 128;

/// Most YAML alias expansions in one file: 100 (Format 2, YAML). An alias to
/// a node that itself holds aliases counts those again, so a "billion laughs"
/// document goes over the bound after a few levels.
pub const MAX_YAML_ALIASES: usize = 100;

/// Most nodes (scalars, sequences, mappings) that alias expansion may add to
/// one YAML document: 1,000,000 (Format 16). Bounds a few aliases to one very
/// large anchored node.
pub const MAX_YAML_EXPANDED_NODES: usize = 1_000_000;

/// What alias expansion may add to one YAML document, in bytes, beyond the
/// file's own size: 1 MiB (Format 16). The bytes of an aliased node are
/// those of every scalar and key it holds plus 8 per node
/// ([`yaml_alias_bytes`]); all expansions of a file together may add at
/// most the file's size plus this floor, so a large anchored scalar can be
/// repeated about once, never a hundred times.
pub const YAML_ALIAS_BYTES_FLOOR: usize = 1024 * 1024;

/// The alias expansion budget of a YAML text of `len` bytes:
/// `len` + [`YAML_ALIAS_BYTES_FLOOR`].
pub fn yaml_alias_bytes(len: usize) -> usize {
    len.saturating_add(YAML_ALIAS_BYTES_FLOOR)
}

/// Values a document may hold beyond its byte allowance: 65,536 (Format
/// 16). A document of `n` bytes may hold at most `n / 8` + this many values
/// (every scalar, array and object, an object member's value counted once,
/// its key not), checked before any value is built ([`max_values`]): a
/// value costs the loader about 100–200 bytes of memory whatever its text,
/// so without this bound `[1,1,1,…]` took over 150 times its size.
pub const VALUES_FLOOR: usize = 65_536;

/// The value budget of a document of `len` bytes: `len / 8` +
/// [`VALUES_FLOOR`].
pub fn max_values(len: usize) -> usize {
    (len / 8).saturating_add(VALUES_FLOOR)
}

/// Longest JSONL line, in bytes, without its line ending: 16 MiB (Format 16).
pub const MAX_JSONL_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most entries in a `.troupe` package: 10,000 (Format 14).
pub const MAX_ZIP_ENTRIES: usize = 10_000;

/// Largest uncompressed size of one package entry: 64 MiB (Format 14). Both
/// the declared size and the bytes actually inflated are checked.
pub const MAX_ZIP_ENTRY_BYTES: u64 = 64 * 1024 * 1024;

/// Largest total uncompressed size of a package: 256 MiB (Format 14), over
/// declared sizes and over bytes actually inflated.
pub const MAX_ZIP_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

/// Most files and directories a pack directory may hold: 10,000 (Format 16,
/// the same bound as a package's entries).
pub const MAX_PACK_ENTRIES: usize = 10_000;

/// Deepest directory nesting inside a pack: 32 levels below the root
/// (Format 16).
pub const MAX_PACK_DIR_DEPTH: usize = 32;

/// Largest `.troupe` package file, in bytes: 256 MiB (Format 14), the same as
/// its total uncompressed bound (deflate does not make data larger).
pub const MAX_PACKAGE_FILE_BYTES: u64 = MAX_ZIP_TOTAL_BYTES;

/// Most items in each list of one scenario that the compiled form numbers
/// with 16-bit indices — cast, worlds, openings, events, outcomes,
/// difficulty presets and knobs: 65,535; cast and worlds together at most
/// 65,534 (one CEL environment each, plus the scenario's). Format 16.
pub const MAX_SCENARIO_ITEMS: usize = u16::MAX as usize;
