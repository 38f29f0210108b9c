/** Sound-effect recipes of actions and textures: impacts, footsteps, whooshes, applause, glass, and the generic texture. Each adds its layers to `ctx.out`. */
import { clamp } from "../music/dsp.ts";
import { hasAny, type Words } from "../music/words.ts";
import type { SfxKind } from "./kinds.ts";
import { bellStrike, events, noiseLayer, toneLayer, transient, wander, type SfxCtx } from "./layers.ts";

/** The recipe of each of these kinds: renders the kind's character into `ctx.out` (adding). */
export const ACTIONS_RECIPES: Record<Extract<SfxKind, "impact" | "footsteps" | "whoosh" | "applause" | "glass" | "generic">, (ctx: SfxCtx, w: Words) => void> = {
  impact,
  footsteps,
  whoosh,
  applause,
  glass,
  generic,
};

function impact(ctx: SfxCtx, w: Words): void {
  const { dur, vary } = ctx;
  const knock = hasAny(w, ["knock", "knocking"]);
  const gap = knock ? vary(0.22, 0.2) : vary(dur > 3 ? 1.6 : dur, 0.3);
  const count = knock ? 3 * Math.max(1, Math.floor(dur / 2)) : Math.max(1, Math.floor(dur / gap));
  for (let i = 0; i < count; i++) {
    const t = knock ? 0.02 + (i % 3) * gap + Math.floor(i / 3) * 2 : 0.02 + i * gap;
    if (t >= dur) break;
    const thumpHz = vary(knock ? 180 : 70, 0.3);
    transient(ctx, t, vary(0.9, 0.2), thumpHz, vary(knock ? 900 : 500, 0.3), vary(0.05, 0.4));
  }
}

function footsteps(ctx: SfxCtx, w: Words): void {
  const { dur, p, vary } = ctx;
  const running = hasAny(w, ["run", "running", "jog", "jogging", "sprint"]);
  const gravel = hasAny(w, ["gravel", "snow", "leaves", "grass", "dirt"]);
  const step = vary(running ? 0.32 : 0.55, 0.1);
  for (let t = 0.05, i = 0; t < dur - 0.05; t += step * (0.95 + 0.1 * p()), i++) {
    const g = (i % 2 === 0 ? 0.9 : 0.75) * vary(1, 0.1);
    transient(ctx, t, g * 0.7, vary(90, 0.2), vary(gravel ? 2500 : 800, 0.3), 0.025);
    if (gravel) {
      noiseLayer(ctx, 0.3 * g, (tt) => Math.exp(-(tt - t) / 0.06), () => 3500, 3000, t, t + 0.25);
    }
  }
}

function whoosh(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  const len = Math.min(dur, vary(1, 0.4));
  const gap = vary(1.2, 0.3);
  for (let t0 = 0; t0 < dur - 0.1; t0 += len + gap) {
    const l = Math.min(len, dur - t0);
    noiseLayer(
      ctx,
      1,
      (t) => Math.sin(Math.PI * clamp((t - t0) / l, 0, 1)) ** 2,
      (t) => 300 + 2500 * Math.sin(Math.PI * clamp((t - t0) / l, 0, 1)),
      600,
      t0,
      t0 + l,
    );
    if (len + gap > dur) break;
  }
}

function applause(ctx: SfxCtx, w: Words): void {
  const { vary } = ctx;
  const crowd = wander(ctx, 0.8);
  const rate = vary(hasAny(w, ["crowd", "audience", "cheer"]) ? 60 : 30, 0.3);
  for (const t of events(ctx, rate)) {
    transient(ctx, t, 0.25 * (0.5 + 0.5 * crowd(t)), 0, vary(1500, 0.4), 0.008);
  }
  if (hasAny(w, ["cheer", "cheering", "crowd"])) {
    noiseLayer(ctx, 0.3, (t) => 0.5 + 0.5 * crowd(t), () => 700, 900);
  }
}

function glass(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  noiseLayer(ctx, 1, (t) => Math.exp(-t / 0.12), () => 5000, 5000, 0, Math.min(dur, 1));
  for (const t of events(ctx, 25, 0, Math.min(dur, 1.5))) {
    bellStrike(ctx, t, vary(3500, 0.4), 0.15 * Math.exp(-t / 0.6), 9);
  }
}

function generic(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  const mv = wander(ctx, vary(1, 0.5));
  const fall = Math.max(0.3, dur * 0.5);
  const env = (t: number) => Math.min(1, t / 0.05) * (0.4 + 0.6 * Math.exp(-t / fall));
  noiseLayer(ctx, 0.6, env, (t) => vary(600, 0.5) * (0.5 + 1.5 * mv(t)), 400);
  for (const t of events(ctx, vary(3, 0.5))) {
    const f = vary(700, 0.7);
    const glide = (tt: number) => f * (1 + 0.3 * tt);
    toneLayer(ctx, t, 0.12, 0.2 * env(t), glide, (tt) => Math.sin(Math.PI * (tt / 0.12)));
  }
}
