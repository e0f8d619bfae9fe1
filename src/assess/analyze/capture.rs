//! Surveillance: the screen, camera, microphone, keyboard or clipboard
//! captured (capture tools run, X11 images grabbed and the Win32 clipboard
//! read through ctypes, capture devices read). Capture that repeats, or of devices read raw, is HIGH
//! (MB216; keystrokes MB212); captured data in a script that sends data off
//! the host is BLOCKED (MB940). One screenshot of a window is not this.

use std::borrow::Cow;

use super::calls::Call;
use super::literal::shorten;
use super::{Analyzer, Node, F, K};

/// What a capture collects.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Captured {
    Screen,
    Camera,
    Microphone,
    Keystrokes,
    Clipboard,
}

impl Captured {
    fn describe(self) -> &'static str {
        match self {
            Captured::Screen => "the screen",
            Captured::Camera => "the camera",
            Captured::Microphone => "the microphone",
            Captured::Keystrokes => "keystrokes",
            Captured::Clipboard => "the clipboard",
        }
    }
}

/// ffmpeg/gstreamer input formats that are capture devices.
fn grab_format(f: &str) -> Option<Captured> {
    match f {
        "x11grab" | "kmsgrab" | "fbdev" | "gdigrab" => Some(Captured::Screen),
        // macOS's capture devices: the camera, the screen or the
        // microphone, by the index given to `-i`.
        "v4l2" | "video4linux2" | "dshow" | "avfoundation" => Some(Captured::Camera),
        "alsa" | "pulse" | "oss" | "jack" => Some(Captured::Microphone),
        _ => None,
    }
}

/// What a command line (lower-cased) captures.
pub(super) fn capture_command(cmd: &str) -> Option<Captured> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let head = words.first().map(|h| h.rsplit('/').next().unwrap_or(h))?;
    let has = |w: &str| words.contains(&w);
    match head {
        "arecord" | "parecord" | "pw-record" | "rec" => Some(Captured::Microphone),
        "ffmpeg" | "avconv" => words
            .windows(2)
            .find(|w| w[0] == "-f")
            .and_then(|w| grab_format(w[1])),
        "xinput" if has("test") || has("test-xi2") => Some(Captured::Keystrokes),
        "xev" | "evtest" | "showkey" | "logkeys" => Some(Captured::Keystrokes),
        "xwd" if has("-root") => Some(Captured::Screen),
        "import" if has("-window") && has("root") => Some(Captured::Screen),
        "scrot" | "gnome-screenshot" | "grim" | "maim" | "spectacle" | "xfce4-screenshooter" => {
            Some(Captured::Screen)
        }
        "fswebcam" | "streamer" | "imagesnap" => Some(Captured::Camera),
        // macOS's screenshot tool.
        "screencapture" => Some(Captured::Screen),
        "xclip" if has("-o") || has("-out") => Some(Captured::Clipboard),
        "xsel" if has("-o") || has("--output") => Some(Captured::Clipboard),
        "wl-paste" | "pbpaste" => Some(Captured::Clipboard),
        _ => None,
    }
}

/// Devices that are a screen, a camera or a microphone.
fn capture_device(p: &str) -> Option<Captured> {
    if p.starts_with("/dev/fb") || p.starts_with("/dev/dri/card") {
        Some(Captured::Screen)
    } else if p.starts_with("/dev/video") {
        Some(Captured::Camera)
    } else if p.starts_with("/dev/snd/pcm") || p == "/dev/dsp" || p == "/dev/audio" {
        Some(Captured::Microphone)
    } else {
        None
    }
}

/// X11 calls (through ctypes or python-xlib) that copy the screen's pixels.
const SCREEN_GRABS: &[&str] = &["XGetImage", "XShmGetImage", "get_image", "XGetSubImage"];

impl<'t> Analyzer<'t> {
    /// Capture devices read and X11 images grabbed by a call.
    pub(super) fn check_capture(&mut self, call: &Call<'t>, read: &[String]) {
        if let Some(c) = read.iter().find_map(|p| capture_device(p)) {
            self.judge_capture(call, c, true);
        } else if call.method.is_some_and(|m| SCREEN_GRABS.contains(&m)) {
            self.judge_capture(call, Captured::Screen, false);
        } else if self.captures_keys(call) {
            self.judge_capture(call, Captured::Keystrokes, false);
        } else if call.method == Some("GetClipboardData") {
            // The Win32 clipboard read, through ctypes (`user32`) or pywin32.
            self.judge_capture(call, Captured::Clipboard, false);
        } else if let Some(c) = call
            .q
            .as_deref()
            .and_then(|q| self.capture_library(q, call))
        {
            self.judge_capture(call, c, false);
        }
    }

    /// A Win32 keyboard hook (`SetWindowsHookEx` with `WH_KEYBOARD` or
    /// `WH_KEYBOARD_LL`), called as a method of `user32` or reached by
    /// `getattr`: every key typed in every program passes through it.
    fn keyboard_hook(&self, call: &Call<'t>, name: &str) -> bool {
        const WH_KEYBOARD: i64 = 2;
        const WH_KEYBOARD_LL: i64 = 13;
        if !name.starts_with("SetWindowsHookEx") {
            return false;
        }
        let Some(kind) = call.pos.first() else {
            return false;
        };
        self.reset_budget();
        let text = self.text(*kind);
        self.fold_int(*kind, call.scope, 0)
            .is_some_and(|k| k == WH_KEYBOARD || k == WH_KEYBOARD_LL)
            || text.contains("WH_KEYBOARD")
    }

    /// `GetAsyncKeyState(vk)` asked for every key code a `for` loop over a
    /// `range` yields: which keys went down since the last call, in any
    /// program. A game asks for the few keys it uses, by name.
    fn polls_every_key(&self, call: &Call<'t>, name: &str) -> bool {
        if name != "GetAsyncKeyState" {
            return false;
        }
        let (Some(arg), Some((l, _))) = (call.pos.first(), call.loop_node) else {
            return false;
        };
        let over_range = l
            .child(F::Right)
            .filter(|r| r.kind() == K::Call)
            .and_then(|r| r.child(F::Function))
            .is_some_and(|f| self.text(f) == "range");
        over_range
            && l.child(F::Left)
                .is_some_and(|t| self.text(t) == self.text(*arg))
    }

    /// A keyboard hook or every key polled (see [`Self::keyboard_hook`],
    /// [`Self::polls_every_key`]).
    fn captures_keys(&self, call: &Call<'t>) -> bool {
        // The name is made once for both: each made it for every call, a
        // copy, and a fold when the callee was fetched.
        let Some(name) = self.win32_name(call) else {
            return false;
        };
        self.keyboard_hook(call, &name) || self.polls_every_key(call, &name)
    }

    /// The name of the Win32 function a call reaches: the method called,
    /// the name a callee resolves to, or the name it was fetched by, with
    /// `getattr(user32, "Name")(...)` or kept on an attribute first
    /// (`self.f = getattr(user32, "Name")`, any fetcher given the name).
    fn win32_name<'c>(&self, call: &'c Call<'t>) -> Option<Cow<'c, str>> {
        if let Some(fetched) = self.fetched_name(call) {
            return Some(Cow::Owned(fetched));
        }
        call.method.or_else(|| call.q_last()).map(Cow::Borrowed)
    }

    /// The name a callee was fetched by: `getattr(lib, "Name")(...)`, or
    /// `self.f(...)` after `self.f = fetch(lib, "Name")`.
    fn fetched_name(&self, call: &Call<'t>) -> Option<String> {
        let fetcher = match call.func.kind() {
            K::Call => Some(call.func),
            K::Attribute => {
                let attr = call.func.child(F::Attribute).map(|a| self.text(a))?;
                let stores = self.attr_stores.get(attr)?;
                stores
                    .first()
                    .map(|(v, _)| *v)
                    .filter(|v| v.kind() == K::Call)
            }
            _ => None,
        }?;
        let name = *self.args(fetcher).0.get(1)?;
        self.reset_budget();
        self.fold(name, call.scope, 0)
    }

    /// Capture libraries: screenshots (mss, Pillow's `ImageGrab`,
    /// pyautogui), recordings (sounddevice, PyAudio input streams, a
    /// camera by number in OpenCV) and keyboard hooks. A video file opened
    /// by OpenCV and PyAudio's output streams capture nothing.
    fn capture_library(&self, q: &str, call: &Call<'t>) -> Option<Captured> {
        if call.is(super::kinds::KEYLOGGER) {
            return Some(Captured::Keystrokes);
        }
        // `q.split_once('.')`, with memchr: asked of most resolved calls.
        let dot = memchr::memchr(b'.', q.as_bytes())?;
        let (module, rest) = (&q[..dot], &q[dot + 1..]);
        match (module, rest) {
            ("mss", "mss" | "MSS" | "mss.grab" | "mss().grab") => Some(Captured::Screen),
            ("PIL", "ImageGrab.grab") | ("pyscreenshot", "grab") => Some(Captured::Screen),
            ("pyautogui", "screenshot") => Some(Captured::Screen),
            ("sounddevice", "rec" | "InputStream" | "RawInputStream" | "playrec") => {
                Some(Captured::Microphone)
            }
            ("speech_recognition", "Microphone") => Some(Captured::Microphone),
            ("pyaudio", _) if call.method == Some("open") => call
                .kwarg("input")
                .is_some_and(|v| self.text(v) == "True")
                .then_some(Captured::Microphone),
            ("cv2", "VideoCapture") => call
                .pos
                .first()
                .is_some_and(|a| a.kind() == super::K::Integer)
                .then_some(Captured::Camera),
            _ => None,
        }
    }

    /// Capture tools among the commands a process call runs (the values
    /// [`super::process`] folded already).
    pub(super) fn check_capture_commands(&mut self, call: &Call<'t>, cmds: &[String]) {
        if let Some(c) = cmds
            .iter()
            .find_map(|c| capture_command(&c.to_ascii_lowercase()))
        {
            self.judge_capture(call, c, false);
        }
    }

    /// Notes a capture and judges it alone: keystrokes (MB212), repeated
    /// capture or a device read raw (MB216).
    fn judge_capture(&mut self, call: &Call<'t>, what: Captured, device: bool) {
        self.signs.capture.get_or_insert((call.node, what));
        let repeated = call.loop_node.is_some();
        let how = match (device, repeated) {
            (true, _) => " read from the device",
            (false, true) => " in a loop",
            _ => "",
        };
        let detail = format!(
            "`{}` captures {}{how}",
            shorten(call.written),
            what.describe()
        );
        if what == Captured::Keystrokes {
            if self.keeps_to_itself() {
                let detail = format!("{detail}; the script writes no file and uses no network");
                self.add("MB225", call.node, detail);
            } else {
                self.add("MB212", call.node, detail);
            }
        } else if repeated || device {
            self.add("MB216", call.node, detail);
        }
    }

    /// Keystrokes captured by a script that marks a file hidden
    /// (`SetFileAttributesW(path, FILE_ATTRIBUTE_HIDDEN)`): a keylogger
    /// keeping its log out of the user's sight until it is collected.
    /// Typing tools keep their statistics where the user can see them.
    fn check_keystrokes_hidden(&mut self, at: Node<'t>) {
        const HIDDEN: i64 = 0x2;
        let hides = self.calls.iter().find(|c| {
            matches!(
                self.site_q(c),
                Some(
                    "ctypes.windll.kernel32.SetFileAttributesW"
                        | "ctypes.windll.kernel32.SetFileAttributesA"
                )
            ) && self.args(c.node).0.get(1).is_some_and(|a| {
                self.reset_budget();
                self.fold_int(*a, c.scope, 0)
                    .is_some_and(|v| v & HIDDEN != 0)
            })
        });
        if let Some(h) = hides.map(|c| c.node) {
            let detail = format!(
                "captures keystrokes (line {}) in a script that hides a file it keeps (line {})",
                at.start_position().row + 1,
                h.start_position().row + 1
            );
            self.add("MB940", at, detail);
        }
    }

    /// A script that can keep nothing it captures: it imports no network
    /// module, runs no command, writes no file (no write method, no log
    /// file) and keeps no database. Keystrokes read there live and die in
    /// memory (a typing test, a reaction game): MB225, not a keylogger.
    pub(super) fn keeps_to_itself(&self) -> bool {
        const RUNS: &[&str] = &["Popen", "run", "system", "call", "check_output"];
        self.sends_and_writes_nothing() && !self.calls_any(RUNS)
    }

    /// A script that imports no network module, writes no file and keeps
    /// no database (it may run commands, judged on their own): what it
    /// reads, it only shows.
    pub(super) fn sends_and_writes_nothing(&self) -> bool {
        const WRITES: &[&str] = &[
            "write",
            "write_text",
            "write_bytes",
            "writelines",
            "dump",
            "execute",
            "executemany",
            "FileHandler",
            "RotatingFileHandler",
            "basicConfig",
            "copyfile",
        ];
        !self.facts.net_import && !self.calls_any(WRITES)
    }

    /// Whether some call's method, or plain function name, is in `names`.
    fn calls_any(&self, names: &[&str]) -> bool {
        let plain = |c: Node<'t>| {
            c.child(super::F::Function)
                .filter(|f| f.kind() == super::K::Identifier)
                .map(|f| self.text(f))
        };
        self.calls.iter().any(|c| {
            c.method
                .or_else(|| plain(c.node))
                .is_some_and(|m| names.contains(&m))
        })
    }

    /// MB940: something captured in a script that sends data off the host,
    /// or keystrokes captured by a script that hides a file it writes.
    pub(super) fn check_capture_shipped(&mut self, send: Option<Node<'t>>) {
        let Some((at, what)) = self.signs.capture else {
            return;
        };
        let Some(send) = send else {
            if what == Captured::Keystrokes {
                self.check_keystrokes_hidden(at);
            }
            return;
        };
        let detail = format!(
            "captures {} (line {}) and sends data off the host (line {})",
            what.describe(),
            at.start_position().row + 1,
            send.start_position().row + 1
        );
        self.add("MB940", at, detail);
    }
}
