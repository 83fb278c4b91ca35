//! A simulated disk that keeps only what was synced, with the power cut after any step.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::*;

#[derive(Default)]
struct Disk {
    /// The files as the running system sees them.
    visible: BTreeMap<PathBuf, Vec<u8>>,
    /// What a power loss leaves: each directory's entries as of its last sync (with the content
    /// each file had when it was last fsynced).
    durable: BTreeMap<PathBuf, Vec<u8>>,
    /// Operations that still succeed before the power goes; `None`: it never goes.
    operations_left: Option<usize>,
}

#[derive(Default)]
struct SimulatedDisk(RefCell<Disk>);

impl SimulatedDisk {
    /// A disk where `path` holds `bytes` durably.
    fn holding(path: &Path, bytes: &[u8]) -> SimulatedDisk {
        let disk = SimulatedDisk::default();
        disk.0
            .borrow_mut()
            .visible
            .insert(path.into(), bytes.to_vec());
        disk.0
            .borrow_mut()
            .durable
            .insert(path.into(), bytes.to_vec());
        disk
    }

    fn cut_power_after(&self, operations: usize) {
        self.0.borrow_mut().operations_left = Some(operations);
    }

    /// The machine restarts: only what was durable is left.
    fn power_loss(&self) {
        let mut disk = self.0.borrow_mut();
        disk.visible = disk.durable.clone();
        disk.operations_left = None;
    }

    fn read(&self, path: &Path) -> Option<Vec<u8>> {
        self.0.borrow().visible.get(path).cloned()
    }

    fn operation(&self) -> io::Result<()> {
        let mut disk = self.0.borrow_mut();
        match &mut disk.operations_left {
            Some(0) => Err(io::Error::other("the power is off")),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl FileSystem for SimulatedDisk {
    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.operation()?;
        let mut disk = self.0.borrow_mut();
        // Written in place and fsynced: a name that is already durable now durably holds it.
        if disk.durable.contains_key(path) {
            disk.durable.insert(path.into(), bytes.to_vec());
        }
        disk.visible.insert(path.into(), bytes.to_vec());
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.operation()?;
        let mut disk = self.0.borrow_mut();
        let bytes = disk.visible.remove(from).ok_or(io::ErrorKind::NotFound)?;
        disk.visible.insert(to.into(), bytes);
        Ok(())
    }

    fn sync_directory(&self, directory: &Path) -> io::Result<()> {
        self.operation()?;
        let mut disk = self.0.borrow_mut();
        disk.durable
            .retain(|path, _| path.parent() != Some(directory));
        let entries: Vec<(PathBuf, Vec<u8>)> = disk
            .visible
            .iter()
            .filter(|(path, _)| path.parent() == Some(directory))
            .map(|(path, bytes)| (path.clone(), bytes.clone()))
            .collect();
        disk.durable.extend(entries);
        Ok(())
    }
}

fn acls() -> PathBuf {
    PathBuf::from("/data/meta/acls.json")
}

#[test]
fn a_replacement_survives_a_power_loss() {
    let disk = SimulatedDisk::holding(&acls(), b"old");
    replace_on(&disk, &acls(), b"new").unwrap();
    disk.power_loss();
    assert_eq!(disk.read(&acls()).as_deref(), Some(&b"new"[..]));

    let fresh = SimulatedDisk::default();
    replace_on(&fresh, &acls(), b"first").unwrap();
    fresh.power_loss();
    assert_eq!(fresh.read(&acls()).as_deref(), Some(&b"first"[..]));
}

#[test]
fn a_power_cut_at_any_step_leaves_the_old_file_or_the_new_one() {
    // Three operations: write and fsync the temporary file, rename, sync the directory.
    for operations in 0..=3 {
        let disk = SimulatedDisk::holding(&acls(), b"old");
        disk.cut_power_after(operations);
        let result = replace_on(&disk, &acls(), b"new");
        assert_eq!(
            result.is_ok(),
            operations == 3,
            "after {operations} operations"
        );
        disk.power_loss();
        let left = disk.read(&acls());
        match result {
            Ok(()) => assert_eq!(left.as_deref(), Some(&b"new"[..])),
            Err(_) => assert!(
                left.as_deref() == Some(b"old") || left.as_deref() == Some(b"new"),
                "after {operations} operations: {left:?}"
            ),
        }
    }
}

/// The simulated disk does catch a missing step: a rename without the directory's sync is
/// undone by a power loss (what the broker's metadata files did before).
#[test]
fn without_the_directory_sync_the_old_file_comes_back() {
    let disk = SimulatedDisk::holding(&acls(), b"old");
    let temporary = acls().with_extension("tmp");
    disk.write_synced(&temporary, b"new").unwrap();
    disk.rename(&temporary, &acls()).unwrap();
    assert_eq!(disk.read(&acls()).as_deref(), Some(&b"new"[..]));
    disk.power_loss();
    assert_eq!(disk.read(&acls()).as_deref(), Some(&b"old"[..]));
}

#[test]
fn on_the_local_file_system_the_file_is_replaced_and_no_temporary_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker-configs.json");
    replace(&path, b"{\"a\":1}").unwrap();
    replace(&path, b"{}").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{}");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(matches!(
        read_small_file(&path, 1),
        Ok(SmallFile::TooLarge(2))
    ));
    assert_eq!(directory_of(Path::new("meta.json")), PathBuf::from("."));

    let nested = dir.path().join("orders-0").join("deeper");
    create_directory(&nested).unwrap();
    create_directory(&nested).unwrap();
    assert!(nested.is_dir());
}
