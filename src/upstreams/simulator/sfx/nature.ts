/** Sound-effect recipes of nature: rain, wind, water, fire, explosions, thunder, birds. Each adds its layers to `ctx.out`. */
import { clamp } from "../music/dsp.ts";
import { hasAny, type Words } from "../music/words.ts";
import type { SfxKind } from "./kinds.ts";
import { events, noiseLayer, toneLayer, transient, wander, type SfxCtx } from "./layers.ts";

/** The recipe of each of these kinds: renders the kind's character into `ctx.out` (adding). */
export const NATURE_RECIPES: Record<Extract<SfxKind, "rain" | "wind" | "water" | "fire" | "explosion" | "thunder" | "bird">, (ctx: SfxCtx, w: Words) => void> = {
  rain,
  wind,
  water,
  fire,
  explosion,
  thunder,
  bird,
};

function rain(ctx: SfxCtx, w: Words): void {
  const { p, vary } = ctx;
  const heavy = hasAny(w, ["heavy", "downpour", "storm", "pouring"]);
  const sw = wander(ctx, 0.5);
  noiseLayer(ctx, heavy ? 0.5 : 0.3, (t) => 0.8 + 0.2 * sw(t), () => vary(3500, 0.3), 5000);
  noiseLayer(ctx, 0.25, () => 1, () => vary(700, 0.3), 900);
  for (const t of events(ctx, vary(heavy ? 70 : 30, 0.4))) {
    const f = vary(3000, 0.5);
    toneLayer(ctx, t, 0.02, 0.15 * p(), (tt) => f * (1 + tt * 20), (tt) => Math.exp(-tt / 0.004));
  }
}

function wind(ctx: SfxCtx, w: Words): void {
  const { vary } = ctx;
  const gust = wander(ctx, vary(0.6, 0.5));
  const pitch = wander(ctx, 0.3);
  const base = vary(hasAny(w, ["howl", "howling", "strong"]) ? 600 : 350, 0.3);
  noiseLayer(ctx, 1, (t) => 0.2 + 0.8 * gust(t), (t) => base * (0.6 + 1.6 * pitch(t) * gust(t)), 180);
  noiseLayer(ctx, 0.15, (t) => 0.3 + 0.7 * gust(t), () => 1200, 2500);
}

function water(ctx: SfxCtx, w: Words): void {
  const { vary } = ctx;
  const waves = hasAny(w, ["ocean", "wave", "waves", "sea", "surf", "beach"]);
  const period = vary(7, 0.3);
  const env = waves
    ? (t: number) => 0.25 + 0.75 * Math.sin(Math.PI * ((t / period) % 1)) ** 3
    : () => 0.8;
  noiseLayer(ctx, 0.5, env, () => vary(waves ? 900 : 1800, 0.3), waves ? 2500 : 3000);
  noiseLayer(ctx, 0.3, env, () => 300, 600);
  if (!waves || hasAny(w, ["splash", "bubble", "bubbling", "stream", "brook"])) {
    for (const t of events(ctx, vary(18, 0.5))) {
      const f = vary(500, 0.6);
      toneLayer(ctx, t, 0.04, 0.12, (tt) => f * (1 + tt * 30), (tt) => Math.sin(Math.PI * (tt / 0.04)));
    }
  }
}

function fire(ctx: SfxCtx, _w: Words): void {
  const { p, vary } = ctx;
  noiseLayer(ctx, 0.35, () => 1, () => 250, 400);
  const burst = wander(ctx, 1.5);
  for (const t of events(ctx, vary(25, 0.5))) {
    if (p() > 0.3 + 0.7 * burst(t)) continue;
    transient(ctx, t, 0.25 * p() + 0.05, 0, vary(3000, 0.5), 0.002 + 0.004 * p());
  }
}

function explosion(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  const decay = clamp(dur * 0.35, 0.2, 3);
  noiseLayer(
    ctx,
    1.2,
    (t) => (t < 0.01 ? t / 0.01 : Math.exp(-(t - 0.01) / decay)),
    (t) => 120 + 2500 * Math.exp(-t * 6),
    900,
  );
  const thump = (t: number) => 30 + 70 * Math.exp(-t * 5);
  toneLayer(ctx, 0, Math.min(dur, 2.5), 0.9, thump, (t) => Math.exp(-t / (decay * 0.6)));
  for (const t of events(ctx, 12, 0.2, Math.min(dur, 0.2 + decay * 2))) {
    transient(ctx, t, 0.12 * Math.exp(-t / decay), 0, vary(2500, 0.5), 0.003);
  }
}

function thunder(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  transient(ctx, vary(0.05, 0.5), 0.7, 0, 3000, 0.05);
  const rumble = wander(ctx, 2.5);
  const decay = clamp(dur * 0.45, 0.3, 6);
  const f = vary(110, 0.3);
  noiseLayer(ctx, 1.3, (t) => Math.exp(-t / decay) * (0.35 + 0.65 * rumble(t)), () => f, 150);
  noiseLayer(ctx, 0.3, (t) => Math.exp(-t / (decay * 0.5)), () => 600, 800);
}

function bird(ctx: SfxCtx, _w: Words): void {
  const { p, vary } = ctx;
  for (const t of events(ctx, vary(2.5, 0.4), 0.05)) {
    const n = 1 + Math.floor(p() * 5);
    const f = vary(3200, 0.3);
    const cl = vary(0.07, 0.3);
    for (let i = 0; i < n; i++) {
      toneLayer(
        ctx,
        t + i * cl * 1.3,
        cl,
        0.3,
        (tt) => f * (1 + 0.5 * (tt / cl)) + 300 * Math.sin(2 * Math.PI * 60 * tt),
        (tt) => Math.sin(Math.PI * (tt / cl)),
      );
    }
  }
}
