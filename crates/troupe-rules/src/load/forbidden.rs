//! The forbidden-file rules, in one place (Format 16): scripts and
//! executables by extension, executables by their first bytes whatever their
//! name. Packs and packages hold data only.

use crate::diag::Code;

/// Extensions (compared without case) of scripts and executables; a file
/// with one is FORBIDDEN_FILE (Format 16).
pub const FORBIDDEN_EXTENSIONS: &[&str] = &[
    "sh", "bash", "zsh", "fish", "ps1", "bat", "cmd", "com", "exe", "dll", "so", "dylib", "py",
    "pyc", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "lua", "jar", "class", "wasm", "bin",
    "msi", "apk", "app", "vbs", "scr",
];

/// Leading bytes of executable formats, with the format's name; a file that
/// starts with one is FORBIDDEN_BINARY (Format 16).
pub const MAGIC_BYTES: &[(&[u8], &str)] = &[
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows (PE) executable"),
    (&[0xfe, 0xed, 0xfa, 0xce], "a Mach-O executable"),
    (&[0xfe, 0xed, 0xfa, 0xcf], "a Mach-O executable"),
    (&[0xce, 0xfa, 0xed, 0xfe], "a Mach-O executable"),
    (&[0xcf, 0xfa, 0xed, 0xfe], "a Mach-O executable"),
    (
        &[0xca, 0xfe, 0xba, 0xbe],
        "a Mach-O universal binary or Java class file",
    ),
    (b"#!", "a script (it starts with #!)"),
    (b"\0asm", "a WebAssembly module"),
];

/// How many leading bytes [`magic_kind`] needs to see.
pub const MAGIC_PREFIX_LEN: usize = 4;

/// The executable format `name`'s extension marks, if it is one of
/// [`FORBIDDEN_EXTENSIONS`] (the text after the last `.` of the last path
/// component; a leading dot alone, as in `.sh`, also counts).
pub fn forbidden_extension(name: &str) -> Option<&'static str> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let (_, ext) = base.rsplit_once('.')?;
    FORBIDDEN_EXTENSIONS
        .iter()
        .find(|e| e.eq_ignore_ascii_case(ext))
        .copied()
}

/// The executable format whose magic bytes `head` starts with (Format 16).
pub fn magic_kind(head: &[u8]) -> Option<&'static str> {
    MAGIC_BYTES
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, kind)| *kind)
}

/// The code and message for a file named `name` whose content starts with
/// `head`: FORBIDDEN_FILE for a script/executable extension, else
/// FORBIDDEN_BINARY for executable magic bytes, else `None` (Format 16).
pub fn classify(name: &str, head: &[u8]) -> Option<(Code, String)> {
    if let Some(ext) = forbidden_extension(name) {
        return Some((
            Code::ForbiddenFile,
            format!(
                "`{name}` has the script or executable extension `.{ext}`; packs hold data only"
            ),
        ));
    }
    magic_kind(head).map(|kind| {
        (
            Code::ForbiddenBinary,
            format!("`{name}` is {kind}; packs hold data only"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_any_case_last_component() {
        assert_eq!(forbidden_extension("scripts/run.SH"), Some("sh"));
        assert_eq!(forbidden_extension("a.tar.exe"), Some("exe"));
        assert_eq!(forbidden_extension(".bash"), Some("bash"));
        assert_eq!(forbidden_extension("npcs/x.yaml"), None);
        assert_eq!(forbidden_extension("sh"), None);
        assert_eq!(forbidden_extension("dir.sh/file"), None);
    }

    #[test]
    fn magic_bytes() {
        assert!(magic_kind(b"\x7fELF\x02\x01").is_some());
        assert!(magic_kind(b"MZ\x90\0").is_some());
        assert!(magic_kind(&[0xcf, 0xfa, 0xed, 0xfe, 7]).is_some());
        assert!(magic_kind(b"#!/bin/sh\n").is_some());
        assert!(magic_kind(b"\0asm\x01\0\0\0").is_some());
        assert!(magic_kind(b"\x7fEL").is_none());
        assert!(magic_kind(b"schema_version: \"0.1\"").is_none());
        assert!(magic_kind(b"").is_none());
    }

    #[test]
    fn extension_wins_over_magic() {
        let (code, _) = classify("x.sh", b"\x7fELF").unwrap();
        assert_eq!(code, Code::ForbiddenFile);
        let (code, _) = classify("npc.yaml", b"\x7fELF").unwrap();
        assert_eq!(code, Code::ForbiddenBinary);
        assert!(classify("npc.yaml", b"name: x").is_none());
    }
}
