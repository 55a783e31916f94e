//! A text box's text and its cursor, with no terminal in sight: the prompt editor (`p`, many lines), the
//! forced text (`i`) and the vocabulary search (`/`) all edit through it.
//!
//! The cursor is a byte index into the text that always sits on a character boundary, so no edit can
//! cut a multi-byte character in two. Lines are the text split at `\n`; columns count display cells (an
//! emoji takes two), so ↑/↓ keep the cursor where it looks as if it was.

use unicode_width::UnicodeWidthChar;

/// Text and a cursor. Every method keeps the cursor on a character boundary within the text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Editor {
    text: String,
    cursor: usize,
}

/// A row of the text as a box of some width draws it: the byte range `start..end` of the text, within
/// one line (the `\n` itself is in no row).
pub type Row = (usize, usize);

fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

impl Editor {
    /// `text` with the cursor at its end, where typing goes on.
    pub fn new(text: impl Into<String>) -> Editor {
        let text = text.into();
        let cursor = text.len();
        Editor { text, cursor }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor as a byte index into [`Editor::text`], on a character boundary.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Empties the box and hands its text over.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts `s` at the cursor and leaves the cursor after it (a paste).
    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    fn prev(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub fn left(&mut self) {
        self.cursor = self.prev();
    }

    pub fn right(&mut self) {
        self.cursor = self.next();
    }

    /// To the start of the cursor's line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// To the end of the cursor's line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Removes `from..self.cursor`, leaving the cursor at `from`; whether anything went.
    fn remove_back_to(&mut self, from: usize) -> bool {
        let changed = from < self.cursor;
        self.text.replace_range(from..self.cursor, "");
        self.cursor = from;
        changed
    }

    /// Deletes the character before the cursor (a line break too); whether anything went.
    pub fn backspace(&mut self) -> bool {
        self.remove_back_to(self.prev())
    }

    /// Deletes the character at the cursor; whether anything went.
    pub fn delete(&mut self) -> bool {
        let next = self.next();
        self.text.replace_range(self.cursor..next, "");
        next > self.cursor
    }

    /// Deletes from the start of the line to the cursor (Ctrl-U); whether anything went.
    pub fn delete_to_line_start(&mut self) -> bool {
        self.remove_back_to(self.line_start())
    }

    /// Deletes the word before the cursor and the blanks after it (Ctrl-W, as in a shell). At the start
    /// of a line it deletes the line break, so repeated presses keep going back.
    pub fn delete_word_back(&mut self) -> bool {
        let before = &self.text[..self.cursor];
        if before.ends_with('\n') {
            return self.backspace();
        }
        let blank = |c: char| c == ' ' || c == '\t';
        let word_end = before.trim_end_matches(blank).len();
        let start = before[..word_end]
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| {
                i + before[i..].chars().next().map_or(1, char::len_utf8)
            });
        self.remove_back_to(start)
    }

    /// Display cells from the start of the cursor's line to the cursor.
    pub fn column(&self) -> usize {
        width(&self.text[self.line_start()..self.cursor])
    }

    /// The cursor's line (0-based) and how many lines there are.
    pub fn line(&self) -> (usize, usize) {
        let line = self.text[..self.cursor].matches('\n').count();
        (line, self.text.matches('\n').count() + 1)
    }

    /// Moves to the line above (`up`) or below, as near the same column as that line allows; whether
    /// there was such a line.
    pub fn vertical(&mut self, up: bool) -> bool {
        let col = self.column();
        let target_start = if up {
            let start = self.line_start();
            if start == 0 {
                return false;
            }
            self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1)
        } else {
            let end = self.line_end();
            if end == self.text.len() {
                return false;
            }
            end + 1
        };
        let line = &self.text[target_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        let mut used = 0;
        let mut at = line.len();
        for (i, c) in line.char_indices() {
            let w = c.width().unwrap_or(0);
            if used + w > col {
                at = i;
                break;
            }
            used += w;
        }
        self.cursor = target_start + at;
        true
    }

    /// The text cut into rows of at most `width` display cells: each line at least one row, a long line
    /// broken between characters.
    pub fn rows(&self, width: usize) -> Vec<Row> {
        let width = width.max(1);
        let mut rows = vec![];
        let mut line_start = 0;
        for line in self.text.split('\n') {
            let (mut row_start, mut used) = (line_start, 0);
            for (i, c) in line.char_indices() {
                let w = c.width().unwrap_or(0);
                if used + w > width && used > 0 {
                    rows.push((row_start, line_start + i));
                    row_start = line_start + i;
                    used = 0;
                }
                used += w;
            }
            rows.push((row_start, line_start + line.len()));
            line_start += line.len() + 1;
        }
        rows
    }

    /// Where the cursor is drawn among `rows` (from [`Editor::rows`]): the row, and the display cells
    /// before it in that row. At a break inside a line it goes to the start of the next row.
    pub fn cursor_cell(&self, rows: &[Row]) -> (usize, usize) {
        let row = rows
            .iter()
            .rposition(|&(s, e)| s <= self.cursor && self.cursor <= e)
            .unwrap_or(0);
        let start = rows.get(row).map_or(0, |r| r.0).min(self.cursor);
        (row, width(&self.text[start..self.cursor]))
    }

    /// A one-line view `room` cells wide that keeps the cursor in sight: the text shown (with `…` where
    /// it is cut) and the cursor's cell in it. Line breaks show as `↵`.
    pub fn window(&self, room: usize) -> (String, usize) {
        let flat = |s: &str| s.replace('\n', "↵");
        let (before, after) = (
            flat(&self.text[..self.cursor]),
            flat(&self.text[self.cursor..]),
        );
        let room = room.max(2);
        let mut shown = if width(&before) < room {
            before.clone()
        } else {
            // The end of what comes before the cursor, after a `…`.
            let mut tail: Vec<char> = vec![];
            let mut used = 1;
            for c in before.chars().rev() {
                let w = c.width().unwrap_or(0);
                if used + w >= room {
                    break;
                }
                used += w;
                tail.push(c);
            }
            std::iter::once('…').chain(tail.into_iter().rev()).collect()
        };
        let col = width(&shown);
        let mut used = col;
        for c in after.chars() {
            let w = c.width().unwrap_or(0);
            if used + w + 1 > room {
                shown.push('…');
                break;
            }
            used += w;
            shown.push(c);
        }
        (shown, col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text with `|` at the cursor.
    fn show(e: &Editor) -> String {
        let mut s = e.text().to_string();
        s.insert(e.cursor(), '|');
        s
    }

    /// An editor from `|`-marked text.
    fn at(marked: &str) -> Editor {
        let cursor = marked.find('|').unwrap();
        Editor {
            text: marked.replacen('|', "", 1),
            cursor,
        }
    }

    #[test]
    fn typing_goes_in_at_the_cursor() {
        let mut e = Editor::new("ac");
        e.left();
        e.insert('b');
        assert_eq!(show(&e), "ab|c");
        e.insert_str("12\n3");
        assert_eq!(show(&e), "ab12\n3|c");
    }

    #[test]
    fn moves_and_deletes_stay_on_character_boundaries() {
        let mut e = Editor::new("né🙂x");
        e.left();
        e.left();
        assert_eq!(show(&e), "né|🙂x");
        e.delete();
        assert_eq!(show(&e), "né|x");
        e.backspace();
        assert_eq!(show(&e), "n|x");
        e.left();
        e.left();
        assert_eq!(show(&e), "|nx", "left stops at the start");
        assert!(!e.backspace(), "nothing before the start");
        e.end();
        e.right();
        assert_eq!(show(&e), "nx|", "right stops at the end");
        assert!(!e.delete(), "nothing after the end");
    }

    #[test]
    fn home_end_and_ctrl_u_work_on_the_cursor_line() {
        let mut e = at("one\ntw|o\nthree");
        e.home();
        assert_eq!(show(&e), "one\n|two\nthree");
        e.end();
        assert_eq!(show(&e), "one\ntwo|\nthree");
        e.left();
        assert!(e.delete_to_line_start());
        assert_eq!(show(&e), "one\n|o\nthree");
        assert!(!e.delete_to_line_start(), "already at the line start");
    }

    #[test]
    fn ctrl_w_deletes_the_word_before_and_then_the_line_break() {
        let mut e = at("Q: what is  |");
        assert!(e.delete_word_back());
        assert_eq!(show(&e), "Q: what |");
        e.delete_word_back();
        e.delete_word_back();
        assert_eq!(show(&e), "|");
        let mut e = at("a b\n|c");
        e.delete_word_back();
        assert_eq!(show(&e), "a b|c");
        let mut e = at("x\nhé🙂|");
        e.delete_word_back();
        assert_eq!(show(&e), "x\n|");
    }

    #[test]
    fn up_and_down_keep_the_column_where_the_line_allows() {
        let mut e = at("long line\nab\nlonger lin|e");
        assert!(e.vertical(true));
        assert_eq!(
            show(&e),
            "long line\nab|\nlonger line",
            "clamped to a short line"
        );
        assert!(e.vertical(true));
        assert_eq!(show(&e), "lo|ng line\nab\nlonger line");
        assert!(!e.vertical(true), "no line above the first");
        assert!(e.vertical(false));
        assert!(e.vertical(false));
        assert_eq!(show(&e), "long line\nab\nlo|nger line");
        assert!(!e.vertical(false), "no line below the last");
        // Columns are display cells: under a wide emoji the cursor lands after it.
        let mut e = at("🙂🙂x\nab|cd");
        e.vertical(true);
        assert_eq!(show(&e), "🙂|🙂x\nabcd");
        assert_eq!(e.line(), (0, 2));
    }

    #[test]
    fn rows_wrap_long_lines_and_keep_empty_ones() {
        let e = Editor::new("abcdef\n\nxy");
        assert_eq!(e.rows(4), vec![(0, 4), (4, 6), (7, 7), (8, 10)]);
        // At the wrap point the cursor shows at the start of the next row.
        let e = at("abcd|ef\n\nxy");
        assert_eq!(e.cursor_cell(&e.rows(4)), (1, 0));
        let e = at("abcdef\n|\nxy");
        assert_eq!(e.cursor_cell(&e.rows(4)), (2, 0));
        let e = Editor::new("abcdef\n\nxy");
        assert_eq!(e.cursor_cell(&e.rows(4)), (3, 2));
        // Wide characters are never split across rows.
        let e = Editor::new("a🙂🙂");
        assert_eq!(e.rows(4), vec![(0, 5), (5, 9)]);
    }

    #[test]
    fn the_one_line_window_follows_the_cursor() {
        let e = Editor::new("abc");
        assert_eq!(e.window(10), ("abc".into(), 3));
        let e = Editor::new("abcdefghij");
        assert_eq!(e.window(6), ("…ghij".into(), 5));
        let e = at("|abcdefghij");
        assert_eq!(e.window(6), ("abcde…".into(), 0));
        let e = at("a\nb|");
        assert_eq!(e.window(10), ("a↵b".into(), 3));
    }
}
