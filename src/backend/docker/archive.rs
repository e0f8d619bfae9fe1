//! The script travels as a tar archive through the engine's API (so remote engines work
//! too): `/sandbox/main.py`, owned by root and read-only, in a directory the code cannot
//! write to.

use crate::error::Step;

/// Where the script is inside the container, and the container's working directory.
pub const DIR: &str = "/sandbox";
pub const SCRIPT: &str = "/sandbox/main.py";

/// The archive to extract at [`DIR`].
pub fn script_tar(script: &[u8]) -> Result<Vec<u8>, crate::error::SetupError> {
    use crate::error::StepContext;
    let mut b = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o555);
    dir.set_uid(0);
    dir.set_gid(0);
    dir.set_size(0);
    b.append_data(&mut dir, "./", std::io::empty())
        .step(Step::Container, "packing the script")?;
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o444);
    h.set_uid(0);
    h.set_gid(0);
    h.set_size(script.len() as u64);
    b.append_data(&mut h, "main.py", script)
        .step(Step::Container, "packing the script")?;
    b.into_inner().step(Step::Container, "packing the script")
}

#[cfg(test)]
mod tests {
    #[test]
    fn archive_holds_the_script_read_only() {
        let t = super::script_tar(b"print(1)\n").unwrap();
        let mut a = tar::Archive::new(&t[..]);
        let entries: Vec<(String, u32, Vec<u8>)> = a
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).unwrap();
                (
                    e.path().unwrap().display().to_string(),
                    e.header().mode().unwrap(),
                    data,
                )
            })
            .collect();
        assert_eq!(
            entries[1],
            ("main.py".into(), 0o444, b"print(1)\n".to_vec())
        );
        assert_eq!(entries[0].1, 0o555);
    }
}
