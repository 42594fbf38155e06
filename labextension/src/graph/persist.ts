/**
 * The expansion state a notebook output keeps: the groups the user opened, stored in
 * the output's metadata under the MIME type (saved with the .ipynb, next to the
 * kernel's payload, which stays as the kernel sent it):
 *
 *     "metadata": {"application/vnd.jaxviz+json": {"expanded": [0, 2, 5], "groups": 9}}
 *
 * `groups` is the graph's group count, a check that the state belongs to this graph.
 * A re-executed cell makes a new output without it: the kernel's `expanded` again.
 */

import { MIME_TYPE } from '../shared/payload';
import { GraphIndex, countShown } from './visible';

export interface StoredExpansion {
  /** Group ids, sorted, ancestors included (a normalized state). */
  expanded: number[];
  /** The graph's number of groups when stored. */
  groups: number;
}

type JSONObjectLike = { readonly [key: string]: unknown };

function isObject(value: unknown): value is JSONObjectLike {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The state as a comparable string. */
export function expansionKey(expanded: Iterable<number>): string {
  return [...expanded].sort((a, b) => a - b).join(',');
}

/** The stored state in an output's metadata, or null when there is none or it is not
 * of the expected shape (non-integer ids are dropped). */
export function storedExpansion(metadata: unknown): StoredExpansion | null {
  const entry = isObject(metadata) ? metadata[MIME_TYPE] : undefined;
  if (!isObject(entry) || !Array.isArray(entry.expanded) || !Number.isInteger(entry.groups)) {
    return null;
  }
  const expanded = entry.expanded.filter((g): g is number => Number.isInteger(g));
  return { expanded, groups: entry.groups as number };
}

/**
 * The state to show first: the stored one when it belongs to this graph (same group
 * count, at least one id of a group of it, not more than `maxItems` visible items),
 * normalized (out-of-range ids dropped, ancestors added); else the kernel's.
 */
export function initialExpansion(
  index: GraphIndex,
  kernelExpanded: readonly number[] | undefined,
  metadata: unknown,
  maxItems = Infinity
): { expanded: Set<number>; stored: boolean } {
  const kernel = index.normalize(kernelExpanded ?? [0]);
  const stored = storedExpansion(metadata);
  const n = index.graph.groups.length;
  if (!stored || stored.groups !== n) {
    return { expanded: kernel, stored: false };
  }
  const ids = stored.expanded.filter(g => g >= 0 && g < n);
  if (!ids.length) {
    return { expanded: kernel, stored: false };
  }
  const expanded = index.normalize(ids);
  if (maxItems < Infinity && countShown(index, expanded) > maxItems) {
    return { expanded: kernel, stored: false };
  }
  return { expanded, stored: true };
}

/**
 * The output metadata recording `expanded` for this graph (other keys kept), or null
 * when the metadata already says that. A state equal to the kernel's is not stored
 * (the entry is removed): the output is then as the kernel made it.
 */
export function metadataWithExpansion(
  metadata: unknown,
  index: GraphIndex,
  kernelExpanded: readonly number[] | undefined,
  expanded: Iterable<number>
): { [key: string]: unknown } | null {
  const base: { [key: string]: unknown } = isObject(metadata) ? { ...metadata } : {};
  const state = [...index.normalize(expanded)].sort((a, b) => a - b);
  const isKernel = expansionKey(state) === expansionKey(index.normalize(kernelExpanded ?? [0]));
  const had = MIME_TYPE in base;
  if (isKernel) {
    if (!had) {
      return null;
    }
    delete base[MIME_TYPE];
    return base;
  }
  const current = storedExpansion(base);
  const groups = index.graph.groups.length;
  if (had && current && current.groups === groups && expansionKey(current.expanded) === expansionKey(state)) {
    return null;
  }
  const previous = isObject(base[MIME_TYPE]) ? (base[MIME_TYPE] as JSONObjectLike) : {};
  base[MIME_TYPE] = { ...previous, expanded: state, groups };
  return base;
}
