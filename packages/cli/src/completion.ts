// `syncline completion bash|zsh|fish`: shell completion scripts written from the command tree itself, so they
// never fall behind a new subcommand or flag: subcommands, each one's flags, the kinds the generic verbs take,
// and object names read from the cluster when completed (`syncline get KIND -o jsonpath=…` with the
// -n/--namespace, --context and --kubeconfig already typed), as kubectl completes them.

export type CommandSpec = { readonly name: string; readonly description: string; readonly flags: readonly string[] };
export type CompletionInput = {
  readonly commands: readonly CommandSpec[];
  readonly kinds: readonly string[];
  readonly kindVerbs: readonly string[];
  /** Verbs whose first argument is a ConfigSync's name (status, diff, rollback, reconcile NAME, events NAME). */
  readonly configSyncVerbs: readonly string[];
  /** Flags that take a value (the next word is not an argument). */
  readonly valueFlags?: readonly string[];
};

/** The template that lists names (one word each), read by the scripts. */
const NAMES_TEMPLATE = 'jsonpath={.items[*].metadata.name}';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export function completionScript(shell: Shell, input: CompletionInput): string {
  switch (shell) {
    case 'bash':
      return bashScript(input);
    case 'zsh':
      return zshScript(input);
    case 'fish':
      return fishScript(input);
  }
}

const words = (list: readonly string[]): string => list.join(' ');
const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

function bashScript(input: CompletionInput): string {
  const cases = input.commands.map((c) => `    ${c.name}) flags=${quote(words(c.flags))} ;;`).join('\n');
  return `# syncline completion for bash. Load it with: source <(syncline completion bash)
_syncline() {
  local cur sub flags i npos
  local -a conn pos
  cur="\${COMP_WORDS[COMP_CWORD]}"
  sub="\${COMP_WORDS[1]}"
  # the arguments typed so far (flags and their values left out), and the connection flags, for listing
  # names from the cluster
  for ((i = 2; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      -n|--namespace|--context|--kubeconfig) conn+=("\${COMP_WORDS[i]}" "\${COMP_WORDS[i+1]}"); ((i++)) ;;
      -A|--all-namespaces) conn+=("-A") ;;
      ${(input.valueFlags ?? []).join('|') || '--no-value-flags'}) ((i++)) ;;
      -*) ;;
      *) pos+=("\${COMP_WORDS[i]}") ;;
    esac
  done
  npos=\${#pos[@]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W ${quote(words(input.commands.map((c) => c.name)))} -- "$cur") )
    return
  fi
  case "$sub" in
${cases}
    *) flags='' ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  elif [[ "\${COMP_WORDS[COMP_CWORD-1]}" == -n || "\${COMP_WORDS[COMP_CWORD-1]}" == --namespace ]]; then
    COMPREPLY=( $(compgen -W "$(kubectl get namespaces -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)" -- "$cur") )
  elif [ "$npos" -eq 0 ] && [[ " ${words(input.kindVerbs)} " == *" $sub "* ]]; then
    COMPREPLY=( $(compgen -W ${quote(words(input.kinds))} -- "$cur") )
  elif [ "$npos" -eq 1 ] && [[ " ${words(input.kindVerbs)} " == *" $sub "* ]]; then
    COMPREPLY=( $(compgen -W "$(syncline get "\${pos[0]}" -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)" -- "$cur") )
  elif [ "$npos" -eq 0 ] && [[ " ${words(input.configSyncVerbs)} " == *" $sub "* ]]; then
    COMPREPLY=( $(compgen -W "$(syncline get configsyncs -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)" -- "$cur") )
  else
    COMPREPLY=( $(compgen -f -- "$cur") )
  fi
}
complete -F _syncline syncline
`;
}

function zshScript(input: CompletionInput): string {
  const subcommands = input.commands.map((c) => `    ${quote(`${c.name}:${c.description.replace(/:/g, '\\:')}`)}`).join('\n');
  const cases = input.commands.map((c) => `    ${c.name}) flags=(${c.flags.map(quote).join(' ')}) ;;`).join('\n');
  return `#compdef syncline
# syncline completion for zsh. Load it with: source <(syncline completion zsh)
_syncline() {
  local -a subcommands flags kinds conn pos
  local i
  for ((i = 3; i < CURRENT; i++)); do
    case "\${words[i]}" in
      -n|--namespace|--context|--kubeconfig) conn+=("\${words[i]}" "\${words[i+1]}"); ((i++)) ;;
      -A|--all-namespaces) conn+=(-A) ;;
      ${(input.valueFlags ?? []).join('|') || '--no-value-flags'}) ((i++)) ;;
      -*) ;;
      *) pos+=("\${words[i]}") ;;
    esac
  done
  subcommands=(
${subcommands}
  )
  kinds=(${input.kinds.map(quote).join(' ')})
  if (( CURRENT == 2 )); then
    _describe 'command' subcommands
    return
  fi
  case "\${words[2]}" in
${cases}
    *) flags=() ;;
  esac
  if [[ "\${words[CURRENT]}" == -* ]]; then
    compadd -- $flags
  elif [[ "\${words[CURRENT-1]}" == -n || "\${words[CURRENT-1]}" == --namespace ]]; then
    compadd -- \${=$(kubectl get namespaces -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)}
  elif (( \${#pos} == 0 )) && [[ " ${words(input.kindVerbs)} " == *" \${words[2]} "* ]]; then
    compadd -- $kinds
  elif (( \${#pos} == 1 )) && [[ " ${words(input.kindVerbs)} " == *" \${words[2]} "* ]]; then
    compadd -- \${=$(syncline get "\${pos[1]}" -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)}
  elif (( \${#pos} == 0 )) && [[ " ${words(input.configSyncVerbs)} " == *" \${words[2]} "* ]]; then
    compadd -- \${=$(syncline get configsyncs -o ${quote(NAMES_TEMPLATE)} "\${conn[@]}" 2>/dev/null)}
  else
    _files
  fi
}
compdef _syncline syncline
`;
}

function fishScript(input: CompletionInput): string {
  const lines = ['# syncline completion for fish. Load it with: syncline completion fish | source', 'complete -c syncline -f'];
  for (const c of input.commands) lines.push(`complete -c syncline -n __fish_use_subcommand -a ${c.name} -d ${quote(c.description.slice(0, 80))}`);
  lines.push(
    `complete -c syncline -n ${quote(`__fish_seen_subcommand_from ${words(input.kindVerbs)}; and test (count (commandline -opc)) -eq 2`)} -a ${quote(words(input.kinds))}`,
  );
  lines.push(
    `complete -c syncline -n ${quote(`__fish_seen_subcommand_from ${words(input.kindVerbs)}; and test (count (commandline -opc)) -eq 3`)} -a ${quote(`(syncline get (commandline -opc)[3] -o '${NAMES_TEMPLATE}' 2>/dev/null | string split ' ')`)}`,
  );
  lines.push(
    `complete -c syncline -n ${quote(`__fish_seen_subcommand_from ${words(input.configSyncVerbs)}; and test (count (commandline -opc)) -eq 2`)} -a ${quote(`(syncline get configsyncs -o '${NAMES_TEMPLATE}' 2>/dev/null | string split ' ')`)}`,
  );
  for (const c of input.commands) {
    for (const flag of c.flags.filter((f) => f.startsWith('--')))
      lines.push(`complete -c syncline -n ${quote(`__fish_seen_subcommand_from ${c.name}`)} -l ${flag.slice(2)}`);
  }
  return `${lines.join('\n')}\n`;
}
