/**
 * Latin letters that read as a plain letter but that NFKC leaves alone, by the letter they read
 * as: the small capitals (ꜰᴜᴄᴋ) and the letters with a stroke, bar, hook, tail, flourish... whose
 * decomposition keeps no plain letter (ƒ, ł, ø, ɗ). Derived from the Unicode character names
 * (LATIN LETTER SMALL CAPITAL F, LATIN SMALL LETTER F WITH STROKE), but for five that obscenity's
 * own table of look-alikes reads as another letter (Ʋ, ʋ, ᶌ, ɽ, ʠ), which are left to it. That
 * table covers most of these already; this one fills its gaps (ꜰ, ꞯ, ꝁ and about a hundred more).
 */
const BY_LETTER: Record<string, string> = {
  a: 'Ⱥᴀᶏẚⱥ',
  b: 'ƀƁƂƃɃɓʙᵬᶀꞖꞗ',
  c: 'ƇƈȻȼɕᴄꞒꞓꞔꟄ𝼝',
  d: 'ĐđƊƋƌȡɖɗᴅᵭᶁᶑꟇꟈ',
  e: 'Ɇɇᴇᶒⱸꬴ',
  f: 'ƑƒᵮᶂꜰꞘꞙ',
  g: 'ƓǤǥɠɢᶃꞠꞡ',
  h: 'ĦħɦʜⱧⱨꞕꞪ',
  i: 'Ɨɨɪᶖ𝼚',
  j: 'ɈɉʝᴊꞲ',
  k: 'ƘƙᴋᶄⱩⱪꝀꝁꝂꝃꝄꝅꞢꞣ',
  l: 'ĿŀŁłƚȴȽɫɬɭʟᶅⱠⱡⱢꝈꝉꞎꞭꬷꬸꬹ𝼑𝼓',
  m: 'ɱᴍᵯᶆⱮꬺ',
  n: 'ƝƞȠȵɲɳɴᵰᶇꞐꞑꞤꞥꬻ',
  o: 'ØøƟǾǿᴏⱺꝊꝋꝌꝍ𝼛',
  p: 'ƤƥᴘᵱᵽᶈⱣꝐꝑꝒꝓꝔꝕ',
  q: 'ɋꝖꝗꝘꝙꞯ',
  r: 'ɌɍɼɾʀᵲᵳᶉⱤꞦꞧꭉ𝼖',
  s: 'ȿʂᵴᶊⱾꜱꞨꞩꟅꟉꟊ𝼞',
  t: 'ŦŧƫƬƭƮȶȾʈᴛᵵⱦ𝼉',
  u: 'ᴜᶙꞸꞹꭎꭒ',
  v: 'ᴠⱱⱴꝞꝟ',
  w: 'ᴡⱲⱳ',
  x: 'ᶍꭖꭗꭘꭙ',
  y: 'ƳƴɎɏʏỾỿꭚ',
  z: 'ƵƶȤȥɀʐʑᴢᵶᶎⱫⱬⱿꟆ',
};

/** Each look-alike character and the lower-case ASCII letter it reads as. */
export const LOOK_ALIKES: ReadonlyMap<string, string> = new Map(
  Object.entries(BY_LETTER).flatMap(([letter, characters]) =>
    [...characters].map((character) => [character, letter] as const),
  ),
);
