//! Databases the script does not own (MB945, MB219): every database or
//! table a catalogue query lists dropped or emptied by computed name, mass
//! updates that make everyone an administrator or change balances with no
//! `WHERE`, password hashes, tokens and cards selected by a script that
//! sends data out, other applications' databases (mail, chat) sent away,
//! and roles given superuser or every privilege. The SQL is judged by what
//! it does, read from the script's literals, f-strings included.

use super::effects::Effects;
use super::fold::is_plus;
use super::literal::shorten;
use super::needles::{CATALOGUE, FOREIGN_DB, GRANT};
use super::{line, Analyzer, Node, F, K};

/// Calls (as written) that run SQL: DB-API cursors and connections,
/// SQLAlchemy, query builders, pandas.
const RUNS_SQL: &[&str] = &[
    "execute(",
    "executemany(",
    "executescript(",
    "exec_driver_sql(",
    ".query(",
    "read_sql",
];

/// The methods of those calls, for statements the script builds.
const SQL_METHODS: &[&str] = &["execute", "executemany", "executescript", "exec_driver_sql"];

/// Database clients run as programs, whose arguments carry the SQL
/// (`psql -c "DROP DATABASE ..."`).
const SQL_CLIENTS: &[&str] = &[
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "sqlcmd",
    "clickhouse-client",
    "duckdb",
];

/// Whether the script runs a database client program.
fn runs_sql_client(fx: &Effects) -> bool {
    fx.commands.iter().any(|c| {
        let program = c.line.split_whitespace().next().unwrap_or_default();
        let program = program.rsplit('/').next().unwrap_or(program);
        SQL_CLIENTS.contains(&program.trim_end_matches(".exe"))
    })
}

/// Queries that list every database, schema or table of a server.
pub(super) const CATALOGUES: &[&str] = &[
    "show databases",
    "show schemas",
    "show tables",
    "information_schema",
    "pg_database",
    "pg_tables",
    "pg_namespace",
    "sqlite_master",
    "sqlite_schema",
    "sys.databases",
    "sys.tables",
];

/// Statements that destroy what they name.
const DESTROYS: &[&str] = &[
    "drop database",
    "drop schema",
    "drop table",
    "truncate",
    "delete from",
];

/// Columns whose mass change grants power or money.
const POWER_COLUMNS: &[&str] = &[
    "role",
    "admin",
    "superuser",
    "is_staff",
    "permission",
    "privilege",
    "balance",
    "points",
    "credit",
    "wallet",
    "password",
];

/// Columns and tables that hold secrets.
pub(super) const SECRET_COLUMNS: &[&str] = &[
    "password",
    "passwd",
    "pwd_hash",
    "pw_hash",
    "token",
    "secret",
    "api_key",
    "apikey",
    "card_number",
    "cc_number",
    "cvv",
    "ssn",
    "private_key",
];

/// Other applications' own databases: mail and chat clients.
pub(super) const FOREIGN_DATABASES: &[&str] = &[
    "/.thunderbird/",
    "global-messages-db.sqlite",
    "/.config/signal/",
    "/.config/slack/",
    "/.config/discord/",
    "/telegram desktop/",
    "/.local/share/evolution/",
    "/library/messages/chat.db",
];

/// Whether the statement's target is computed: a placeholder, an
/// interpolation or nothing (the name is concatenated after it).
fn computed_target(rest: &str) -> bool {
    let mut rest = rest.trim_start();
    for skip in ["table ", "if exists ", "only "] {
        rest = rest.strip_prefix(skip).unwrap_or(rest).trim_start();
    }
    let rest = rest.trim_start_matches(['"', '`', '\'', '[']);
    rest.is_empty() || rest.starts_with(['{', '%', '?', '+'])
}

/// A destroying statement whose target is computed, and its keyword.
fn destroys_computed(t: &str) -> Option<&'static str> {
    DESTROYS.iter().copied().find(|d| {
        t.find(d).is_some_and(|i| {
            let rest = &t[i + d.len()..];
            let name_end = rest
                .trim_start()
                .find(char::is_whitespace)
                .unwrap_or(rest.len());
            computed_target(rest) && !rest[..name_end.min(rest.len())].contains("where")
        })
    })
}

/// `UPDATE t SET power_column = ...` with no `WHERE` (or `WHERE 1=1`).
fn mass_update(t: &str) -> Option<&'static str> {
    let t = t.trim_start();
    let set = t.strip_prefix("update ")?.split_once(" set ")?.1;
    let (cols, cond) = match set.split_once(" where ") {
        Some((c, w)) => (c, Some(w.trim())),
        None => (set, None),
    };
    let everyone = cond.is_none_or(|w| matches!(w, "1=1" | "1 = 1" | "true"));
    if !everyone {
        return None;
    }
    cols.split(',').find_map(|assignment| {
        let (col, value) = assignment.split_once('=')?;
        let col_is = POWER_COLUMNS.iter().copied().find(|c| col.contains(c))?;
        // Money and passwords changed for everyone are abuse whatever the
        // value; roles and flags only when they grant (demoting everyone
        // is a clean-up).
        let v = value.trim().trim_matches(['\'', '"']);
        let grants = matches!(v, "1" | "true" | "yes" | "y")
            || ["admin", "superuser", "root", "owner", "staff"]
                .iter()
                .any(|w| v.contains(w));
        let any_value = matches!(
            col_is,
            "balance" | "points" | "credit" | "wallet" | "password"
        );
        (any_value || grants).then_some(col_is)
    })
}

/// A role or user made superuser or given every privilege.
/// `found` holds the needle lists `t` holds (see [`super::needles`]).
fn grants_all(t: &str, found: u32) -> bool {
    // Every branch below needs one of these words ("superuser" for the
    // first): most literals have neither, and are done by their bits.
    if found & GRANT == 0 {
        return false;
    }
    let creates = t.contains("create role")
        || t.contains("create user")
        || t.contains("alter role")
        || t.contains("alter user");
    (creates && t.contains("superuser") && !t.contains("nosuperuser"))
        || t.contains("grant all")
        || t.contains("with grant option")
}

/// Tables of accounts and payments, whose every column a `SELECT *` takes.
const ACCOUNT_TABLES: &[&str] = &[
    "users",
    "accounts",
    "customers",
    "credentials",
    "logins",
    "payments",
    "cards",
    "members",
];

/// A `SELECT` of secret columns, or of every column of an account table.
fn selects_secrets(t: &str) -> Option<&'static str> {
    let t = t.trim_start();
    let (cols, rest) = t.strip_prefix("select ")?.split_once(" from ")?;
    if cols.trim() == "*" {
        let table = rest
            .split_whitespace()
            .next()?
            .trim_matches(['"', '`', ';']);
        let table = table.rsplit('.').next().unwrap_or(table);
        return ACCOUNT_TABLES.iter().copied().find(|a| *a == table);
    }
    SECRET_COLUMNS.iter().copied().find(|c| cols.contains(c))
}

impl<'t> Analyzer<'t> {
    /// MB945 and MB219 over the SQL the script carries.
    pub(super) fn check_database(&mut self, fx: &Effects<'t>) {
        if !self.call_text_has(RUNS_SQL) && !runs_sql_client(fx) {
            return;
        }
        let catalogue = fx.text_holding(CATALOGUE);
        let send = self.signs.network_send;
        let mut found = false;
        let mut foreign = None;
        let built = self.built_statements();
        let literals = fx.texts().iter().enumerate();
        let literals = literals.map(|(i, (n, t))| (n, &**t, fx.found(i)));
        for (n, t, bits) in literals.chain(built.iter().map(|(n, t, b)| (n, t.as_str(), *b))) {
            // The catalogue first: without one, no text needs the search.
            let destroyed = catalogue.and_then(|(cat, _)| Some((destroys_computed(t)?, cat)));
            if let Some((kw, cat)) = destroyed {
                let shown = shorten(t);
                let detail = format!(
                    "`{shown}`: {kw} on every name the catalogue query at line {} lists",
                    line(cat)
                );
                self.add("MB945", *n, detail);
                found = true;
            } else if let Some(col) = mass_update(t) {
                let shown = shorten(t);
                let detail = format!("`{shown}`: changes {col} for every row, no WHERE");
                self.add("MB945", *n, detail);
                found = true;
            } else if let (Some(col), Some(s)) = (selects_secrets(t), send) {
                let shown = shorten(t);
                let detail = format!(
                    "`{shown}` selects {col}, in a script that sends data (`{}`, line {})",
                    shorten(self.text(s)),
                    line(s)
                );
                self.add("MB945", *n, detail);
                found = true;
            } else if grants_all(t, bits) {
                let shown = shorten(t);
                match send {
                    Some(s) => {
                        let detail = format!("`{shown}`: an all-powerful account, in a script that sends data (line {})", line(s));
                        self.add("MB945", *n, detail);
                        found = true;
                    }
                    None => self.add("MB219", *n, format!("`{shown}`")),
                }
            } else if send.is_none() && foreign.is_none() && bits & FOREIGN_DB != 0 {
                foreign = Some(*n);
            } else if send.is_some() && !found && bits & FOREIGN_DB != 0 {
                let shown = shorten(t);
                let detail = format!(
                    "`{shown}`: another application's database, in a script that sends data"
                );
                self.add("MB945", *n, detail);
                found = true;
            }
        }
        if !found {
            self.report_foreign_messages(foreign);
        }
    }

    /// The statements SQL calls run that the script builds from pieces
    /// rather than writes whole (`"".join(("DR" + "OP ", "TAB" + "LE ")) +
    /// name`), lower-cased, what does not fold as `{}`: a keyword split to
    /// hide it is the keyword. Literals, f-strings and literals joined to
    /// unknown names are among the script's texts already.
    fn built_statements(&self) -> Vec<(Node<'t>, String, u32)> {
        let mut out = Vec::new();
        for c in self
            .calls
            .iter()
            .filter(|c| c.method.is_some_and(|m| SQL_METHODS.contains(&m)))
        {
            let (pos, _) = self.args(c.node);
            let Some(mut arg) = pos.first().copied() else {
                continue;
            };
            if arg.kind() == K::Identifier {
                match self.local_value(arg, c.scope) {
                    Some(v) => arg = v,
                    None => continue,
                }
            }
            if arg.kind() == K::String {
                continue;
            }
            self.reset_budget();
            let mut text = String::new();
            let mut built = false;
            for part in self.plus_operands(arg) {
                match self.fold(part, c.scope, 1) {
                    Some(v) => {
                        built |= part.kind() != K::String;
                        text.push_str(&v);
                    }
                    None => text.push_str("{}"),
                }
            }
            if built {
                let lower = text.to_ascii_lowercase();
                let bits = super::needles::needles_in(&lower);
                out.push((c.node, lower, bits));
            }
        }
        out
    }

    /// The operands of a chain of `+`, left to right (`a + b + c`); a
    /// node that is no `+` is its own only operand.
    fn plus_operands(&self, n: Node<'t>) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        let mut stack = vec![n];
        while let Some(n) = stack.pop() {
            match (is_plus(n), n.child(F::Left), n.child(F::Right)) {
                (true, Some(l), Some(r)) => {
                    stack.push(r);
                    stack.push(l);
                }
                _ => out.push(n),
            }
        }
        out
    }

    /// A mail or chat client's database queried by a script that sends
    /// nothing: other people's messages read and kept (MB972, HIGH).
    fn report_foreign_messages(&mut self, foreign: Option<Node<'t>>) {
        if let Some(n) = foreign {
            let shown = shorten(self.text(n));
            let detail = format!(
                "`{shown}`: another application's messages, read by a script that runs SQL"
            );
            self.add("MB972", n, detail);
        }
    }
}
