//! The `file` source: tails files matched by globs, line by line, following rotation (rename +
//! a new file, and copytruncate). Positions are `dev:inode` → the byte after the last line
//! handed out, with a fingerprint of the file's first bytes so a reused inode is not mistaken
//! for the file it replaced.

mod config;
mod position;
mod source;
mod tracked;

pub use config::{FileSourceConfig, StartAt};
pub use source::FileSource;

#[cfg(test)]
mod tests;
