//! GRUB as a one-shot bootloader: the entry `grub.cfg` has for a kernel,
//! copied into `custom.cfg` (which `/etc/grub.d/41_custom` makes every
//! generated `grub.cfg` read) with the command line benchrig needs, and
//! chosen for the next boot only with `grub-reboot`, which writes
//! `next_entry` to grubenv; GRUB clears it as it boots. The default entry
//! is never touched, so any boot after that one is the baseline's.
//!
//! The parsing is pure (`entry_for`, `one_shot`, `without_block`), so it
//! is tested on real `grub.cfg` texts.

use std::path::{Path, PathBuf};

/// Where a host's GRUB keeps its configuration: Debian's, then Fedora's.
const DIRS: [&str; 2] = ["/boot/grub", "/boot/grub2"];

/// A host's GRUB: its configuration dir and its tools' names.
#[derive(Clone, Debug, PartialEq)]
pub struct Grub {
    pub dir: PathBuf,
    /// `grub-reboot` or `grub2-reboot`.
    pub reboot: PathBuf,
    /// `grub-editenv` or `grub2-editenv`.
    pub editenv: PathBuf,
    /// `grub-probe` or `grub2-probe`, when there.
    pub probe: Option<PathBuf>,
}

impl Grub {
    /// The host's GRUB, when it has one benchrig can drive.
    pub fn find() -> Option<Grub> {
        let dir = DIRS.iter().map(Path::new).find(|d| d.join("grub.cfg").is_file())?;
        let two = dir.ends_with("grub2");
        let tool =
            |name: &str| crate::cmd::which(&if two { name.replace("grub-", "grub2-") } else { name.to_string() });
        Some(Grub {
            dir: dir.to_path_buf(),
            reboot: tool("grub-reboot")?,
            editenv: tool("grub-editenv")?,
            probe: tool("grub-probe"),
        })
    }

    pub fn cfg(&self) -> PathBuf {
        self.dir.join("grub.cfg")
    }

    pub fn custom(&self) -> PathBuf {
        self.dir.join("custom.cfg")
    }

    /// Why a one-shot boot cannot be trusted here, or none: GRUB clears
    /// `next_entry` by writing grubenv as it boots, which it cannot do on
    /// LVM, RAID, an encrypted disk, btrfs or ZFS; there the one-shot entry
    /// would stick and every later boot would be the candidate's.
    pub fn why_not(&self, cfg_text: &str) -> Option<String> {
        if !cfg_text.contains("custom.cfg") {
            return Some(format!(
                "{} does not read custom.cfg (is /etc/grub.d/41_custom executable?): no one-shot entry can be added",
                self.cfg().display()
            ));
        }
        if !cfg_text.contains("next_entry") {
            return Some(format!("{} has no `next_entry` logic: grub-reboot would do nothing", self.cfg().display()));
        }
        let probe = self.probe.as_ref()?;
        let ask = |target: &str| {
            let dir = self.dir.to_string_lossy().into_owned();
            let argv = [probe.to_string_lossy().into_owned(), format!("--target={target}"), dir];
            crate::cmd::run_within(&argv, std::time::Duration::from_secs(30))
                .ok()
                .filter(|o| o.ok())
                .map(|o| o.stdout.trim().to_string())
        };
        if let Some(abstraction) = ask("abstraction").filter(|a| !a.is_empty()) {
            return Some(format!(
                "GRUB cannot write its environment block on {} ({}): a one-shot entry would stick",
                abstraction.split_whitespace().collect::<Vec<_>>().join(" "),
                self.dir.display()
            ));
        }
        match ask("fs").as_deref() {
            Some(fs @ ("btrfs" | "zfs")) => Some(format!(
                "GRUB cannot write its environment block on {fs} ({}): a one-shot entry would stick",
                self.dir.display()
            )),
            _ => None,
        }
    }
}

/// The lines between the braces of the first boot entry of `cfg` that
/// boots `/…/vmlinuz-<release>` in normal mode (not recovery), in a
/// submenu or not.
pub fn entry_for(cfg: &str, release: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = cfg.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i].trim_start();
        if head.starts_with("menuentry ") && head.trim_end().ends_with('{') && !head.contains("recovery") {
            let (body, end) = block(&lines, i + 1);
            let boots_it = body.iter().any(|l| {
                linux_line(l).is_some_and(|(_, image, args)| {
                    image.rsplit('/').next() == Some(&format!("vmlinuz-{release}")) && !is_single(args)
                })
            });
            if boots_it {
                return Some(body.iter().map(|l| l.to_string()).collect());
            }
            i = end;
        }
        i += 1;
    }
    None
}

/// The lines of the block that starts at `from` (after its `{`), and the
/// index of its closing `}`.
fn block<'a>(lines: &[&'a str], from: usize) -> (Vec<&'a str>, usize) {
    let mut depth = 1usize;
    for (j, l) in lines.iter().enumerate().skip(from) {
        let t = l.trim();
        if t.ends_with('{') {
            depth += 1;
        } else if t == "}" {
            depth -= 1;
            if depth == 0 {
                return (lines[from..j].to_vec(), j);
            }
        }
    }
    (lines[from..].to_vec(), lines.len())
}

/// A `linux` (`linux16`, `linuxefi`) line: its command, image and arguments.
fn linux_line(line: &str) -> Option<(&str, &str, &str)> {
    let t = line.trim();
    let (cmd, rest) = t.split_once(char::is_whitespace)?;
    if !matches!(cmd, "linux" | "linux16" | "linuxefi") {
        return None;
    }
    let rest = rest.trim_start();
    let (image, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Some((cmd, image, args.trim()))
}

fn is_single(args: &str) -> bool {
    args.split_whitespace().any(|w| w == "single" || w == "recovery")
}

/// The id of benchrig's one-shot entry for a boot.
pub fn entry_id(token: &str) -> String {
    format!("benchrig-{token}")
}

const BEGIN: &str = "### benchrig one-shot ";
const END: &str = "### end benchrig one-shot ";

/// The block benchrig appends to `custom.cfg`: the kernel's own entry
/// with `extra` appended to its command line, under an id of its own.
pub fn one_shot(body: &[String], release: &str, token: &str, extra: &str) -> String {
    let mut out = format!(
        "{BEGIN}{token}: benchrig-agent removes it once the host is back on its baseline\nmenuentry 'benchrig: {release} once' --id '{}' {{\n",
        entry_id(token)
    );
    for l in body {
        match linux_line(l) {
            Some((cmd, image, args)) => {
                let indent = &l[..l.len() - l.trim_start().len()];
                let args = [args, extra].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
                out.push_str(&format!("{indent}{cmd}\t{image} {args}\n"));
            }
            None => {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out.push_str(&format!("}}\n{END}{token}\n"));
    out
}

/// `custom.cfg` without benchrig's block of `token` (or of any token,
/// with `None`), and whether there was one.
pub fn without_block(text: &str, token: Option<&str>) -> (String, bool) {
    let mut out = String::new();
    let mut inside = false;
    let mut found = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        if let Some(tok) = t.strip_prefix(BEGIN) {
            let tok = tok.split(':').next().unwrap_or("");
            if token.is_none_or(|want| want == tok) {
                inside = true;
                found = true;
                continue;
            }
        }
        if inside {
            if t.starts_with(END) {
                inside = false;
            }
            continue;
        }
        out.push_str(line);
    }
    (out, found)
}

/// A top-level item of `grub.cfg` (or of a submenu): its title, its id,
/// and for an entry its kernel image, for a submenu its items.
#[derive(Debug)]
struct Item {
    title: String,
    id: Option<String>,
    image: Option<String>,
    children: Vec<Item>,
}

/// The items of a block's lines.
fn items(lines: &[&str]) -> Vec<Item> {
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i].trim_start();
        let submenu = head.starts_with("submenu ");
        if (submenu || head.starts_with("menuentry ")) && head.trim_end().ends_with('{') {
            let (body, end) = block(lines, i + 1);
            let quoted = quoted_words(head);
            let id = head
                .split_whitespace()
                .position(|w| w == "$menuentry_id_option" || w == "--id")
                .and_then(|_| quoted.get(1).cloned());
            let image = (!submenu)
                .then(|| body.iter().find_map(|l| linux_line(l).map(|(_, img, _)| img.to_string())))
                .flatten();
            let children = if submenu { items(&body) } else { vec![] };
            out.push(Item { title: quoted.first().cloned().unwrap_or_default(), id, image, children });
            i = end;
        }
        i += 1;
    }
    out
}

/// The single-quoted words of a line, in order.
fn quoted_words(line: &str) -> Vec<String> {
    line.split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

/// The kernel image GRUB boots by default, as `cfg` says: its
/// `set default=` (not the `next_entry` one), with `${saved_entry}` read
/// from grubenv's `saved`; an index, an id or a title, `>` into a submenu.
/// None when it names nothing found.
pub fn default_image(cfg: &str, saved: Option<&str>) -> Option<String> {
    let value = cfg.lines().find_map(|l| {
        let v = l.trim().strip_prefix("set default=")?.trim_matches('"');
        (!v.contains("next_entry")).then(|| v.to_string())
    })?;
    let value = match value.as_str() {
        "${saved_entry}" => saved.unwrap_or("0").to_string(),
        _ => value,
    };
    let lines: Vec<&str> = cfg.lines().collect();
    let mut level = items(&lines);
    let mut parts = value.split('>').peekable();
    while let Some(part) = parts.next() {
        let item = match part.parse::<usize>() {
            Ok(n) => level.into_iter().nth(n)?,
            Err(_) => level.into_iter().find(|it| it.id.as_deref() == Some(part) || it.title == part)?,
        };
        if parts.peek().is_none() {
            return item.image;
        }
        level = item.children;
    }
    None
}

/// The linux line's arguments of the entry, the command line GRUB gives.
pub fn entry_args(body: &[String]) -> Option<String> {
    body.iter().find_map(|l| linux_line(l).map(|(_, _, args)| args.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Debian 12's grub-mkconfig writes for two kernels (submenu, recovery entries).
    const CFG: &str = r#"
if [ "${next_entry}" ] ; then
   set default="${next_entry}"
   set next_entry=
   save_env next_entry
   set boot_once=true
else
   set default="gnulinux-advanced-1234>gnulinux-6.1.0-28-amd64-advanced-1234"
fi
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-1234' {
	load_video
	insmod ext2
	search --no-floppy --fs-uuid --set=root 1234
	echo	'Loading Linux 6.12.9+bpo-amd64 ...'
	linux	/boot/vmlinuz-6.12.9+bpo-amd64 root=UUID=1234 ro console=ttyS0 quiet
	initrd	/boot/initrd.img-6.12.9+bpo-amd64
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1234' {
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-28-amd64 (recovery mode)' --class debian $menuentry_id_option 'gnulinux-6.1.0-28-amd64-recovery-1234' {
		linux	/boot/vmlinuz-6.1.0-28-amd64 root=UUID=1234 ro single console=ttyS0
		initrd	/boot/initrd.img-6.1.0-28-amd64
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-28-amd64' --class debian $menuentry_id_option 'gnulinux-6.1.0-28-amd64-advanced-1234' {
		insmod ext2
		search --no-floppy --fs-uuid --set=root 1234
		linux	/boot/vmlinuz-6.1.0-28-amd64 root=UUID=1234 ro console=ttyS0 quiet
		initrd	/boot/initrd.img-6.1.0-28-amd64
	}
}
### BEGIN /etc/grub.d/41_custom ###
if [ -f  ${config_directory}/custom.cfg ]; then
  source ${config_directory}/custom.cfg
fi
"#;

    #[test]
    fn the_entry_of_a_kernel_is_found_in_a_submenu_and_never_the_recovery_one() {
        let body = entry_for(CFG, "6.1.0-28-amd64").unwrap();
        assert_eq!(entry_args(&body).unwrap(), "root=UUID=1234 ro console=ttyS0 quiet");
        assert!(body.iter().any(|l| l.contains("initrd.img-6.1.0-28-amd64")));
        let top = entry_for(CFG, "6.12.9+bpo-amd64").unwrap();
        assert!(top.iter().any(|l| l.contains("vmlinuz-6.12.9+bpo-amd64")));
        assert_eq!(entry_for(CFG, "6.1.0-2"), None, "a prefix of a release is another release");
    }

    #[test]
    fn the_default_entry_is_resolved_by_id_path_index_title_and_saved_entry() {
        assert_eq!(default_image(CFG, None).as_deref(), Some("/boot/vmlinuz-6.1.0-28-amd64"));
        let first = CFG.replace("gnulinux-advanced-1234>gnulinux-6.1.0-28-amd64-advanced-1234", "0");
        assert_eq!(default_image(&first, None).as_deref(), Some("/boot/vmlinuz-6.12.9+bpo-amd64"));
        let nested = CFG.replace("gnulinux-advanced-1234>gnulinux-6.1.0-28-amd64-advanced-1234", "1>0");
        assert_eq!(default_image(&nested, None).as_deref(), Some("/boot/vmlinuz-6.1.0-28-amd64"));
        let saved = CFG.replace("gnulinux-advanced-1234>gnulinux-6.1.0-28-amd64-advanced-1234", "${saved_entry}");
        assert_eq!(default_image(&saved, Some("Debian GNU/Linux")).as_deref(), Some("/boot/vmlinuz-6.12.9+bpo-amd64"));
        assert_eq!(default_image(&saved, None).as_deref(), Some("/boot/vmlinuz-6.12.9+bpo-amd64"));
        let gone = CFG.replace("gnulinux-advanced-1234>gnulinux-6.1.0-28-amd64-advanced-1234", "nothing");
        assert_eq!(default_image(&gone, None), None);
    }

    #[test]
    fn the_one_shot_entry_is_the_kernels_own_with_the_words_appended_and_comes_out_again() {
        let body = entry_for(CFG, "6.1.0-28-amd64").unwrap();
        let block = one_shot(&body, "6.1.0-28-amd64", "t0k", "panic=10 benchrig.boot=t0k");
        assert!(block.contains("--id 'benchrig-t0k' {"), "{block}");
        assert!(
            block.contains(
                "linux\t/boot/vmlinuz-6.1.0-28-amd64 root=UUID=1234 ro console=ttyS0 quiet panic=10 benchrig.boot=t0k"
            ),
            "{block}"
        );
        let theirs = "menuentry 'theirs' {\n}\n";
        let custom = format!("{theirs}{block}");
        assert_eq!(without_block(&custom, Some("other")), (custom.clone(), false));
        assert_eq!(without_block(&custom, Some("t0k")), (theirs.to_string(), true));
        assert_eq!(without_block(&custom, None), (theirs.to_string(), true));
    }
}
