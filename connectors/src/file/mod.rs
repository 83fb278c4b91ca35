//! The `file` source: tails files matched by globs, line by line, following rotation (rename +
//! a new file, and copytruncate). Positions are `dev:inode` → the byte after the last line
//! handed out, with a fingerprint of the file's first bytes so a reused inode is not mistaken
//! for the file it replaced.

mod config;
#[cfg(feature = "runtime")]
mod position;
#[cfg(feature = "runtime")]
mod source;
#[cfg(feature = "runtime")]
mod tracked;

pub use config::{FileSourceConfig, StartAt};
#[cfg(feature = "runtime")]
pub use source::FileSource;

#[cfg(test)]
mod tests;
