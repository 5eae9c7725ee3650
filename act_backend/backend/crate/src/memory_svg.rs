//! The memory picture (`memory.svg` beside `report.json`): one lane per on-chip buffer, the
//! program's steps across, positions in the buffer down, and one labelled rectangle per value
//! with a `<title>` that a browser shows on hover. It draws a [`Drawing`], which says what to
//! draw in the schedule's own units; this module only lays it out and writes the SVG.

use std::fmt::Write;

/// One lane: an on-chip buffer and its positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub name: String,
    /// Positions in the buffer (its access dimensions flattened).
    pub capacity: i64,
    /// Its positions and what each holds, e.g. "128 x bf16[64]", under its name.
    pub caption: String,
}

/// One value: a rectangle in its lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Rect {
    pub lane: usize,
    /// Half-open interval in the schedule's time (step `p` reads at `2p`, writes at `2p + 1`).
    pub time: (i64, i64),
    /// Half-open range of positions in the lane's buffer.
    pub positions: (i64, i64),
    /// Written inside the rectangle when it fits.
    pub label: String,
    /// Shown on hover: the whole story of the value.
    pub hover: String,
    /// Rectangles of one key share a colour (the instruction that made the value).
    pub colour_key: usize,
    /// The value's id in `report.json` (`program.values[].id`), as `data-value`.
    pub value: usize,
}

/// Everything the picture shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawing {
    /// The picture's title (its `<title>`) and heading.
    pub title: String,
    /// One caption per step (its assembly call), shown on hover over the step's number.
    pub steps: Vec<String>,
    pub lanes: Vec<Lane>,
    pub rects: Vec<Rect>,
    /// The name of each colour key that a box uses, for the legend.
    pub legend: Vec<(usize, String)>,
}

const LEFT: f64 = 170.0;
const TOP: f64 = 64.0;
const RIGHT: f64 = 24.0;
const LANE_HEIGHT: f64 = 200.0;
const LANE_GAP: f64 = 36.0;
const LEGEND_ROW: f64 = 18.0;
/// The drawing's width for the steps; a step is never narrower or wider than these.
const STEPS_WIDTH: f64 = 900.0;
const MIN_STEP: f64 = 14.0;
const MAX_STEP: f64 = 72.0;
/// Average width of a character of the label font, to decide whether a label fits.
const CHAR_WIDTH: f64 = 6.4;

/// The narrowest the picture gets, so that its legend reads whole.
const MIN_WIDTH: f64 = 780.0;

/// Colours for values, one per colour key (cycled): distinct hues, light enough for black text.
const PALETTE: [&str; 10] = [
    "#8ecae6", "#ffb703", "#90be6d", "#f28482", "#cdb4db", "#d4a373", "#72efdd", "#f7aef8",
    "#bdbdbd", "#dde5b6",
];

/// The positions a lane shows: all of them, unless its values use less than a quarter; then
/// the power of two at least a quarter above the highest one used, so that small values in a
/// large buffer stay readable (the caption says how much is shown).
pub fn shown_positions(lane: &Lane, rects: &[Rect], index: usize) -> i64 {
    let used = rects.iter().filter(|r| r.lane == index).map(|r| r.positions.1).max().unwrap_or(0);
    if used * 4 >= lane.capacity {
        return lane.capacity.max(1);
    }
    let want = (used + used / 4).max(1) as u64;
    (want.next_power_of_two() as i64).min(lane.capacity).max(1)
}

/// The SVG text of `drawing`.
pub fn render(drawing: &Drawing) -> String {
    let steps = drawing.steps.len().max(1) as f64;
    let step_w = (STEPS_WIDTH / steps).clamp(MIN_STEP, MAX_STEP);
    let width = (LEFT + step_w * steps + RIGHT).max(MIN_WIDTH);
    let lanes_h = drawing.lanes.len() as f64 * (LANE_HEIGHT + LANE_GAP);
    let legend_h = LEGEND_ROW * (drawing.legend.len() as f64 + 1.0);
    let height = TOP + lanes_h + legend_h;
    let x_of = |t: i64| LEFT + t as f64 * step_w / 2.0;
    let mut svg = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">",
        w = num(width),
        h = num(height)
    );
    let _ = writeln!(svg, "<title>{}</title>", escape(&drawing.title));
    svg.push_str(
        "<style>.value:hover rect { stroke: #000; stroke-width: 2; } \
         .step:hover text { font-weight: bold; }</style>\n",
    );
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>",
        num(LEFT),
        escape(&drawing.title)
    );
    // The step axis: every step's number where it fits, its call on hover.
    let every = (28.0 / step_w).ceil().max(1.0) as usize;
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">step</text>",
        num(LEFT - 8.0),
        num(TOP - 14.0)
    );
    for (s, call) in drawing.steps.iter().enumerate() {
        let x = x_of(2 * s as i64) + step_w / 2.0;
        let label = if s % every == 0 { s.to_string() } else { String::new() };
        let _ = writeln!(
            svg,
            "<g class=\"step\"><title>step {s}: {}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" \
             height=\"18\" fill=\"#fff\" fill-opacity=\"0\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"middle\" fill=\"#555\">{label}</text></g>",
            escape(call),
            num(x - step_w / 2.0),
            num(TOP - 28.0),
            num(step_w),
            num(x),
            num(TOP - 14.0)
        );
    }
    let shown: Vec<i64> = drawing
        .lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| shown_positions(lane, &drawing.rects, i))
        .collect();
    for (i, lane) in drawing.lanes.iter().enumerate() {
        let top = TOP + i as f64 * (LANE_HEIGHT + LANE_GAP);
        let right = |x: f64, y: f64, attrs: &str, text: &str| {
            format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\"{attrs}>{}</text>",
                num(x),
                num(y),
                escape(text)
            )
        };
        let mut captions = vec![right(
            LEFT - 8.0,
            top + LANE_HEIGHT / 2.0 - 6.0,
            " font-weight=\"bold\"",
            &lane.name,
        )];
        captions.push(right(
            LEFT - 8.0,
            top + LANE_HEIGHT / 2.0 + 8.0,
            " fill=\"#555\"",
            &lane.caption,
        ));
        if shown[i] < lane.capacity {
            let note = format!("0..{} of {} shown", shown[i], lane.capacity);
            captions.push(right(
                LEFT - 8.0,
                top + LANE_HEIGHT / 2.0 + 22.0,
                " fill=\"#555\"",
                &note,
            ));
        }
        captions.push(right(LEFT - 8.0, top + 10.0, " fill=\"#555\"", "0"));
        captions.push(right(
            LEFT - 8.0,
            top + LANE_HEIGHT,
            " fill=\"#555\"",
            &shown[i].to_string(),
        ));
        let _ = write!(
            svg,
            "<g class=\"lane\" data-buffer=\"{}\">{}",
            escape(&lane.name),
            captions.join("")
        );
        let _ = write!(
            svg,
            "<rect class=\"buffer\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\" \
             stroke=\"#999\"/>",
            num(LEFT),
            num(top),
            num(step_w * steps),
            num(LANE_HEIGHT)
        );
        // Step boundaries: a step reads its operands at its left edge.
        for s in 1..drawing.steps.len() {
            let x = x_of(2 * s as i64);
            let _ = write!(
                svg,
                "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#e2e2e2\"/>",
                num(top),
                num(top + LANE_HEIGHT),
                x = num(x)
            );
        }
        svg.push_str("</g>\n");
    }
    for b in &drawing.rects {
        if b.lane >= drawing.lanes.len() {
            continue;
        }
        let top = TOP + b.lane as f64 * (LANE_HEIGHT + LANE_GAP);
        let scale = LANE_HEIGHT / shown[b.lane] as f64;
        let (x0, x1) = (x_of(b.time.0), x_of(b.time.1));
        let (y0, y1) = (top + b.positions.0 as f64 * scale, top + b.positions.1 as f64 * scale);
        let colour = PALETTE[b.colour_key % PALETTE.len()];
        let _ = write!(
            svg,
            "<g class=\"value\" data-value=\"{}\"><title>{}</title><rect class=\"value\" \
             x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\" stroke=\"#333\" \
             stroke-width=\"0.5\"/>",
            b.value,
            escape(&b.hover),
            num(x0),
            num(y0),
            num(x1 - x0),
            num(y1 - y0),
        );
        let fits =
            (x1 - x0) >= b.label.chars().count() as f64 * CHAR_WIDTH + 4.0 && (y1 - y0) >= 12.0;
        if fits {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" dominant-baseline=\"central\" \
                 pointer-events=\"none\">{}</text>",
                num((x0 + x1) / 2.0),
                num((y0 + y1) / 2.0),
                escape(&b.label)
            );
        }
        svg.push_str("</g>\n");
    }
    let legend_top = TOP + lanes_h;
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" fill=\"#555\">colour: the instruction that made the value; \
         across: steps; down: positions in the buffer</text>",
        num(LEFT),
        num(legend_top)
    );
    for (row, (key, name)) in drawing.legend.iter().enumerate() {
        let y = legend_top + LEGEND_ROW * (row as f64 + 1.0);
        let _ = writeln!(
            svg,
            "<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\" \
             stroke=\"#333\" stroke-width=\"0.5\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
            num(LEFT),
            num(y - 10.0),
            PALETTE[key % PALETTE.len()],
            num(LEFT + 18.0),
            num(y),
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Text safe inside an element or a double-quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 text.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate, to two decimals, without trailing zeros: equal values print equally, so
/// rectangles that touch share an edge exactly.
fn num(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawing() -> Drawing {
        let b = |lane, time, positions, label: &str, value| Rect {
            lane,
            time,
            positions,
            label: label.into(),
            hover: format!("{label} <made> by \"step\" & kept"),
            colour_key: value % 3,
            value,
        };
        Drawing {
            title: "kernel <m> & co".into(),
            steps: vec!["api.load(n=1)".into(), "api.add(n=1)".into(), "api.store(n=1)".into()],
            lanes: vec![
                Lane { name: "d1".into(), capacity: 128, caption: "128 x bf16[64]".into() },
                Lane { name: "d2".into(), capacity: 64, caption: "64 x bf16[64]".into() },
            ],
            rects: vec![
                b(0, (1, 3), (0, 64), "a", 0),
                b(0, (3, 5), (0, 64), "b<1>", 1),
                b(1, (3, 7), (0, 64), "s", 2),
            ],
            legend: vec![(0, "load".into()), (1, "add".into()), (2, "store".into())],
        }
    }

    /// The opening and closing tags of `svg` in order, checked to nest: a small well-formedness
    /// check (attributes quoted, no stray `<` or `&` in text) without an XML library.
    fn tags(svg: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            assert!(!text.contains('>'), "stray '>' in {text:?}");
            for (k, _) in text.match_indices('&') {
                let entity = &text[k..text[k..].find(';').map_or(text.len(), |e| k + e + 1)];
                assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&entity), "{entity}");
            }
            let close = rest[open..].find('>').expect("a tag ends") + open;
            let tag = &rest[open + 1..close];
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            assert!(!tag.contains('<'), "'<' inside <{tag}>");
            let name: String =
                tag.trim_start_matches('/').chars().take_while(|c| c.is_alphanumeric()).collect();
            if tag.starts_with('/') {
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(name.as_str()),
                    "</{name}> closes nothing open"
                );
            } else if !tag.ends_with('/') {
                stack.push(name.clone());
            }
            seen.push(name);
            rest = &rest[close + 1..];
        }
        assert!(stack.is_empty(), "left open: {stack:?}");
        assert!(rest.trim().is_empty());
        seen
    }

    #[test]
    fn the_picture_is_well_formed_with_one_rectangle_and_title_per_value() {
        let d = drawing();
        let svg = render(&d);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        let tags = tags(&svg);
        assert_eq!(tags.first().map(String::as_str), Some("svg"));
        assert_eq!(svg.matches("<rect class=\"value\"").count(), d.rects.len());
        assert_eq!(svg.matches("<g class=\"value\"").count(), d.rects.len());
        assert_eq!(svg.matches("<g class=\"lane\"").count(), d.lanes.len());
        assert_eq!(svg.matches("<g class=\"step\"").count(), d.steps.len());
        // Labels and hovers are escaped, never markup.
        assert!(
            svg.contains("<title>b&lt;1&gt; &lt;made&gt; by &quot;step&quot; &amp; kept</title>")
        );
        assert!(svg.contains("<title>kernel &lt;m&gt; &amp; co</title>"));
    }

    #[test]
    fn rectangles_sit_in_their_lane_at_their_time_and_positions() {
        let svg = render(&drawing());
        // Three steps fill the steps' width at the widest step: 72 px per step, 36 per time unit.
        // `a` lives over [1, 3) in d1 (128 positions over 200 px): x 206, width 72, y 64, height 100.
        assert!(svg.contains("data-value=\"0\"><title>a &lt;made&gt; by &quot;step&quot; &amp; kept</title><rect class=\"value\" x=\"206\" y=\"64\" width=\"72\" height=\"100\""), "{svg}");
        // `b` follows `a` at the same positions: they share an edge, x = 278.
        assert!(
            svg.contains("<rect class=\"value\" x=\"278\" y=\"64\" width=\"72\" height=\"100\""),
            "{svg}"
        );
        // `s` is in the second lane, which starts 236 px lower and has 64 positions.
        assert!(
            svg.contains("<rect class=\"value\" x=\"278\" y=\"300\" width=\"144\" height=\"200\""),
            "{svg}"
        );
    }

    #[test]
    fn a_label_is_written_only_where_it_fits() {
        let mut d = drawing();
        d.rects[0].label = "a_name_far_too_long_for_one_step".into();
        let svg = render(&d);
        assert!(!svg.contains(">a_name_far_too_long_for_one_step</text>"));
        assert!(svg.contains(">s</text>"));
    }

    #[test]
    fn a_lane_shows_what_its_values_use_when_that_is_under_a_quarter() {
        let lane = Lane { name: "spad".into(), capacity: 16384, caption: String::new() };
        let rect = |positions| Rect {
            lane: 0,
            time: (1, 3),
            positions,
            label: String::new(),
            hover: String::new(),
            colour_key: 0,
            value: 0,
        };
        for (used, shown) in
            [(0, 1), (512, 1024), (819, 1024), (820, 2048), (4096, 16384), (16384, 16384)]
        {
            assert_eq!(shown_positions(&lane, &[rect((0, used))], 0), shown, "{used}");
        }
        // Another lane's values do not count.
        assert_eq!(shown_positions(&lane, &[rect((0, 16384))], 1), 1);
    }

    #[test]
    fn coordinates_print_equal_values_equally() {
        for (x, text) in
            [(186.0, "186"), (0.5, "0.5"), (1.0 / 3.0, "0.33"), (2.0, "2"), (12.5, "12.5")]
        {
            assert_eq!(num(x), text, "{x}");
        }
    }
}
