"""Inline SVG charts, so the HTML report opens offline with nothing to fetch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#65a30d"]
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _scale(lo: float, hi: float, start: float, end: float):
    span = (hi - lo) or 1.0
    return lambda v: start + (v - lo) / span * (end - start)


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    step = (hi - lo) / count if hi > lo else 1.0
    return [lo + i * step for i in range(count + 1)]


CHAR_W = 7.0  # a 12 px sans-serif character is at most about this wide (labels are sized by it)
MAX_LABEL_CHARS = 60  # a longer label is shortened in the middle, its whole text on hover
MIN_PLOT_W = 340  # the chart widens for long labels rather than squeeze the plot


def _fitted(label: str, room: float) -> str:
    """The label, shortened in the middle to fit `room` pixels (a model id's start and end tell it apart)."""
    most = max(6, int(room / CHAR_W))
    if len(label) <= most:
        return label
    head = (most - 1) // 2
    return label[:head] + "\u2026" + label[len(label) - (most - 1 - head) :]


def forest_plot(
    rows: Sequence[tuple[str, float, float | None, float | None, bool]],
    *,
    title: str,
    unit: str,
    reference: float = 0.0,
    band: float | None = None,
    band_label: str | None = None,
    domain: tuple[float, float] | None = None,
    width: int = 640,
) -> str:
    """One row per (label, estimate, ci_lower, ci_upper, flagged): a dot with its CI. `domain`
    holds the axis within the values a metric can take (a rate: 0 to 1); `band_label` says what
    the shaded band around the reference means."""
    if not rows:
        return ""
    label_w = CHAR_W * min(max(len(label) for label, *_ in rows), MAX_LABEL_CHARS) + 16
    width = max(width, int(label_w) + MIN_PLOT_W)
    row_h = 26
    top = 34 + (18 if band and band_label else 0)
    height = top + row_h * len(rows) + 34
    values = [v for _, e, lo, hi, _ in rows for v in (e, lo, hi) if v is not None] + [reference]
    if band:
        values += [reference - band, reference + band]
    lo_v, hi_v = min(values), max(values)
    pad = (hi_v - lo_v) * 0.08 or 0.5
    lo_v, hi_v = lo_v - pad, hi_v + pad
    if domain is not None:
        lo_v, hi_v = max(lo_v, domain[0]), min(hi_v, domain[1])
    x = _scale(lo_v, hi_v, label_w, width - 20)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" {FONT}>',
        f'<text x="0" y="16" font-weight="bold" font-size="14">{escape(title)}</text>',
    ]
    bottom = top + row_h * len(rows)
    if band:
        out.append(
            f'<rect x="{x(reference - band):.1f}" y="{top}" width="{x(reference + band) - x(reference - band):.1f}" '
            f'height="{bottom - top}" fill="#e2e8f0"/>'
        )
        if band_label:
            out.append(
                f'<rect x="0" y="{top - 22}" width="12" height="12" fill="#e2e8f0" stroke="#94a3b8"/>'
                f'<text x="18" y="{top - 12}" fill="#475569">{escape(band_label)}</text>'
            )
    out.append(
        f'<line x1="{x(reference):.1f}" y1="{top}" x2="{x(reference):.1f}" y2="{bottom}" stroke="#64748b" '
        f'stroke-dasharray="4 3"/>'
    )
    for i, (label, est, lo, hi, flagged) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        color = "#dc2626" if flagged else "#2563eb"
        out.append(
            f'<text x="{label_w - 8:.0f}" y="{y + 4:.1f}" text-anchor="end"><title>{escape(label)}</title>'
            f"{escape(_fitted(label, label_w - 16))}</text>"
        )
        if lo is not None and hi is not None:
            out.append(
                f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="{color}" stroke-width="2"/>'
            )
        out.append(f'<circle cx="{x(est):.1f}" cy="{y:.1f}" r="5" fill="{color}"/>')
    tick_format = "+.2f" if domain is None or domain[0] < 0 else ".2f"  # a rate has no sign to show
    for tick in _ticks(lo_v, hi_v):
        out.append(
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle" fill="#475569">{tick:{tick_format}}</text>'
        )
    half = CHAR_W * len(unit) / 2  # the caption stays within the chart however wide the labels are
    centre = min(max((label_w + width - 20) / 2, half), width - half)
    out.append(
        f'<text x="{centre:.0f}" y="{bottom + 30}" text-anchor="middle" fill="#475569">{escape(unit)}</text></svg>'
    )
    return "".join(out)


def scatter(
    points: Sequence[tuple[float, float]],
    line: tuple[float, float] | None,
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 640,
    height: int = 320,
) -> str:
    if not points:
        return ""
    left, bottom_pad, top = 50, 40, 30
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x = _scale(min(xs), max(xs), left, width - 15)
    y = _scale(min(ys), max(ys), height - bottom_pad, top)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" {FONT}>',
        f'<text x="0" y="16" font-weight="bold" font-size="14">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width - 15 - left}" height="{height - bottom_pad - top}" '
        f'fill="none" stroke="#cbd5e1"/>',
    ]
    out.extend(
        f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="2.2" fill="#2563eb" fill-opacity="0.45"/>' for a, b in points
    )
    if line is not None:
        intercept, slope = line
        x0, x1 = min(xs), max(xs)
        out.append(
            f'<line x1="{x(x0):.1f}" y1="{y(intercept + slope * x0):.1f}" x2="{x(x1):.1f}" '
            f'y2="{y(intercept + slope * x1):.1f}" stroke="#dc2626" stroke-width="2.5"/>'
        )
    for tick in _ticks(min(xs), max(xs)):
        out.append(
            f'<text x="{x(tick):.1f}" y="{height - bottom_pad + 15}" text-anchor="middle" '
            f'fill="#475569">{tick:.0f}</text>'
        )
    for tick in _ticks(min(ys), max(ys), 4):
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" fill="#475569">{tick:.1f}</text>')
    out.append(
        f'<text x="{(left + width) / 2:.0f}" y="{height - 6}" text-anchor="middle" fill="#475569">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text x="12" y="{(top + height - bottom_pad) / 2:.0f}" fill="#475569" '
        f'transform="rotate(-90 12 {(top + height - bottom_pad) / 2:.0f})" text-anchor="middle">'
        f"{escape(y_label)}</text></svg>"
    )
    return "".join(out)


def line_chart(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    y_label: str,
    width: int = 640,
    height: int = 300,
    reference: float | None = 0.0,
) -> str:
    """One polyline per series over the labelled buckets, with a legend."""
    if len(labels) < 2 or not series:
        return ""
    left, top = 50, 30
    legend_h = 18 * ((len(series) + 2) // 3)
    plot_bottom = height - 40 - legend_h
    values = [v for s in series.values() for v in s if v is not None]
    if reference is not None:
        values.append(reference)
    if not values:
        return ""
    x = _scale(0, len(labels) - 1, left, width - 20)
    y = _scale(min(values), max(values), plot_bottom, top)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" {FONT}>',
        f'<text x="0" y="16" font-weight="bold" font-size="14">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width - 20 - left}" height="{plot_bottom - top}" fill="none" '
        f'stroke="#cbd5e1"/>',
    ]
    if reference is not None:
        out.append(
            f'<line x1="{left}" y1="{y(reference):.1f}" x2="{width - 20}" y2="{y(reference):.1f}" '
            f'stroke="#64748b" stroke-dasharray="4 3"/>'
        )
    for i, (name, values_) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        points = [f"{x(k):.1f},{y(v):.1f}" for k, v in enumerate(values_) if v is not None]
        out.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.extend(f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="3" fill="{color}"/>' for p in points)
        lx, ly = left + (i % 3) * ((width - left) / 3), plot_bottom + 36 + 18 * (i // 3)
        out.append(
            f'<rect x="{lx:.0f}" y="{ly - 9:.0f}" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 14:.0f}" y="{ly:.0f}">{escape(name[:28])}</text>'
        )
    for k, label in enumerate(labels):
        if k in (0, len(labels) - 1) or len(labels) <= 6:
            out.append(
                f'<text x="{x(k):.1f}" y="{plot_bottom + 16}" text-anchor="middle" fill="#475569">'
                f"{escape(label)}</text>"
            )
    for tick in _ticks(min(values), max(values), 4):
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" fill="#475569">{tick:+.2f}</text>')
    out.append(
        f'<text x="12" y="{(top + plot_bottom) / 2:.0f}" fill="#475569" '
        f'transform="rotate(-90 12 {(top + plot_bottom) / 2:.0f})" text-anchor="middle">'
        f"{escape(y_label)}</text></svg>"
    )
    return "".join(out)
