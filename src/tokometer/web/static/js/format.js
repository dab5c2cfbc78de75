// Numbers as the CLI prints them (`report.text.num`): about three significant figures.
import { locale, t } from './i18n.js';

const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

/** 1.00 × 10³⁰: a figure far outside everyday sizes, in the page's locale, never 31 digits wide. */
export function scientific(value, digits = 3) {
  const exponent = Math.floor(Math.log10(Math.abs(value)));
  const mantissa = value / 10 ** exponent;
  const text = new Intl.NumberFormat(locale(), { minimumFractionDigits: digits - 1, maximumFractionDigits: digits - 1 }).format(mantissa);
  return `${text} × 10${String(exponent).split('').map((c) => SUPERSCRIPT[c]).join('')}`;
}

export function num(value, digits = 3) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value === 0) return '0';
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  if (magnitude >= 9 || magnitude < -4) return scientific(value, digits);
  const decimals = Math.max(0, digits - 1 - magnitude);
  return new Intl.NumberFormat(locale(), { minimumFractionDigits: decimals, maximumFractionDigits: decimals }).format(value);
}

export function int(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (Math.abs(value) >= 1e9) return scientific(value);
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: 0 }).format(value);
}

export function pct(fraction, digits = 0) {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '–';
  return new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: digits, minimumFractionDigits: digits }).format(fraction);
}

export function seconds(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value < 1) return `${int(value * 1000)} ${t('unit.ms')}`;
  if (value < 120) return `${num(value)} s`;
  return `${num(value / 60)} min`;
}

export function gb(bytes) {
  return `${num(bytes / 1e9)} ${t('unit.gb')}`;
}

/** A size in GB (decimal) with the language's unit: 4.91 GB, 4,91 Go. */
export function gbNum(valueGb) {
  return `${num(valueGb)} ${t('unit.gb')}`;
}

/** A bandwidth in GB/s with the language's unit. */
export function gbps(value) {
  return `${num(value)} ${t('unit.gbps')}`;
}

/** A time as ms, or µs below a millisecond. */
export function msOrUs(seconds) {
  return seconds > 0 && seconds < 1e-3 ? `${num(seconds * 1e6)} ${t('unit.us')}` : `${num(seconds * 1e3)} ${t('unit.ms')}`;
}

export function tokS(value) {
  return `${num(value)} ${t('unit.tok_s')}`;
}

/** Axis ticks: 1, 20, 1.5K, 10K (compact, locale-aware). */
export function compact(value) {
  return new Intl.NumberFormat(locale(), { notation: 'compact', maximumSignificantDigits: 3 }).format(value);
}

/** A number as typed: no forced decimals (a rate of 2 stays "2"). */
export function plain(value) {
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: 2 }).format(value);
}
