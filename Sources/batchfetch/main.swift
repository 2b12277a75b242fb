import BatchFetchCLI
import Foundation

exit(await BatchFetchMain.run(arguments: Array(CommandLine.arguments.dropFirst())))
