import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  IMAGE_MODELS,
  IMAGE_TIERS,
  imageTiersOf,
  priceTableMarkdown,
  VIDEO_MODELS,
} from '../../functions/core/catalog';
import { priceImage, priceVideo } from '../../functions/core/pricing';
import { imageBody, videoBody } from './core-fixtures';
import { validateImageRequest, validateVideoRequest } from './mock-profile-rules';

const prices = readFileSync(join(__dirname, '..', '..', 'docs', 'api', 'prices.md'), 'utf8');

/** The text of docs/api/prices.md between the price markers. */
function priceSection(): string {
  const match = /<!-- prices:start -->\n([\s\S]*?)\n<!-- prices:end -->/.exec(prices);
  return match?.[1] ?? '';
}

/** Data rows of the table whose header starts with `header`, as trimmed cells. */
function tableRows(section: string, header: string): string[][] {
  const lines = section.split('\n');
  const start = lines.findIndex((line) => line.startsWith(header));
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

describe('the price table in docs/api/prices.md', () => {
  test('the section between the markers is exactly priceTableMarkdown()', () => {
    // Act
    const section = priceSection();

    // Assert
    expect(section).toBe(priceTableMarkdown());
  });

  test('every image model is listed with the price the pricing function charges per tier', () => {
    // Prepare
    const rows = tableRows(priceSection(), '| Model | 1K');

    // Act
    const listed = rows.map(([id]) => id);

    // Assert
    expect(listed).toEqual(IMAGE_MODELS.map((m) => m.id));
    for (const model of IMAGE_MODELS) {
      const cells = rows.find(([id]) => id === model.id)?.slice(1);
      const expected = IMAGE_TIERS.map((tier) =>
        imageTiersOf(model).includes(tier)
          ? String(priceImage(validateImageRequest(imageBody(model.id, { providerInput: { resolution: tier } }))))
          : '—',
      );
      expect(cells).toEqual(expected);
    }
  });

  test('every video model is listed with the price the pricing function charges per duration and resolution', () => {
    // Prepare
    const section = priceSection();
    const header = section.split('\n').find((line) => line.startsWith('| Model | Family')) ?? '';
    const durations = [...header.matchAll(/\| (\d+) s/g)].map((m) => Number(m[1]));
    const rows = tableRows(section, '| Model | Family');

    // Act
    const listed = new Set(rows.map(([id]) => id));

    // Assert
    expect([...listed]).toEqual(VIDEO_MODELS.map((m) => m.id));
    expect(rows).toHaveLength(VIDEO_MODELS.reduce((n, m) => n + m.resolutions.length, 0));
    for (const [id, family, , resolution, ...cells] of rows) {
      const model = VIDEO_MODELS.find((m) => m.id === id);
      expect(model?.family).toBe(family);
      const expected = durations.map((duration) =>
        model?.durations.includes(duration)
          ? String(priceVideo(validateVideoRequest(videoBody(model.id, { duration, providerInput: { resolution } }))))
          : '—',
      );
      expect(cells).toEqual(expected);
    }
  });
});
